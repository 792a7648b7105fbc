"""Each action's commands, made from the fault and the target as built (run nowhere here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.config.faults import FaultSpec
from volbench.faults import FaultError, md, nfs, throttle
from volbench.faults.base import Command
from volbench.targets.base import Built

M2 = "/dev/disk/by-id/virtio-m2"


def md_built() -> Built:
    return Built("r1", "mdraid", None, "/dev/md127", info={
        "device": "/dev/md127", "level": "raid1",
        "disks": [{"device": "/dev/vda", "listed": "/dev/disk/by-id/virtio-m1"},
                  {"device": "/dev/vdb", "listed": M2}]})


def test_md_fail_sets_the_limits_then_fails_and_removes_the_member(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(md, "speed_limits", lambda: {"speed_limit_min": 1000,
                                                      "speed_limit_max": 200000})
    action = md.fail(FaultSpec(8, "fail", device=M2, options={
        "speed_limit_min": 20000, "speed_limit_max": 20000}), md_built())
    assert action.apply_commands() == [
        Command(path="/proc/sys/dev/raid/speed_limit_min", text="20000"),  # raising min
        Command(path="/proc/sys/dev/raid/speed_limit_max", text="20000"),  # lowering max
        Command(("mdadm", "--fail", "/dev/md127", "/dev/vdb")),
        Command(("mdadm", "--remove", "/dev/md127", "/dev/vdb"))]
    assert action.data == {"array": "/dev/md127", "member": "/dev/vdb"}
    # The old limits come back when the run ends, not at the restore.
    assert action.keep == [("fault-md-speed", {"limits": {"speed_limit_min": 1000,
                                                          "speed_limit_max": 200000}})]


def test_md_fail_of_a_disk_that_is_no_member_names_the_members() -> None:
    with pytest.raises(FaultError, match="its members: /dev/disk/by-id/virtio-m1, " + M2):
        md.fail(FaultSpec(8, "fail", device="/dev/disk/by-id/virtio-x"), md_built())


def test_md_restore_adds_only_a_member_that_is_out(tmp_path: Path) -> None:
    gone = {"array": str(tmp_path / "no-array"), "member": "/dev/vdb"}
    assert md._undo_commands(gone) == []  # the array was stopped: nothing to add back


def test_nfs_stop_refuses_a_server_volbench_did_not_start() -> None:
    theirs = Built("n3", "nfs", Path("/mnt"), info={"server": {"server": "already running"}})
    with pytest.raises(FaultError, match="was running before volbench"):
        nfs.stop(FaultSpec(5, "stop", target="n3"), theirs, {})
    ours = Built("n3", "nfs", Path("/mnt"), info={
        "server": {"server": "started by volbench", "threads": 8}, "version": "3",
        "mount": {"options": "rw,hard,timeo=600"}})
    action = nfs.stop(FaultSpec(5, "stop", target="n3"), ours, {})
    assert action.apply_commands() == [Command(("rpc.nfsd", "0"))]
    assert action.facts["mount_options"] == "rw,hard,timeo=600"
    assert action.data == {"threads": 8}


def test_slow_cuts_every_cap_of_the_class(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throttle, "device_number", lambda device: "7:3")
    built = Built("std", "loopdisk", None, devices=["/dev/loop3"], cgroup=tmp_path)
    action = throttle.slow(FaultSpec(4, "slow", target="std", options={"percent": 20}), built,
                           [("read_iops", 500), ("write_bps", 50 * 2**20)])
    assert action.apply_commands() == [
        Command(path=str(tmp_path / "blkio.throttle.read_iops_device"), text="7:3 100"),
        Command(path=str(tmp_path / "blkio.throttle.write_bps_device"),
                text=f"7:3 {10 * 2**20}")]
    (tmp_path / "blkio.throttle.read_iops_device").write_text("")
    # Undo writes back what exists (a removed cgroup's files are skipped).
    assert throttle._undo_commands(action.data) == [
        Command(path=str(tmp_path / "blkio.throttle.read_iops_device"), text="7:3 500")]
    with pytest.raises(FaultError, match="has no throttle to slow"):
        throttle.slow(FaultSpec(4, "slow", target="x"), Built("x", "loopdisk", None), [])


def test_nfs_stop_of_a_server_another_target_of_the_experiment_started() -> None:
    """The second NFS target finds nfsd "already running": the first one started it."""
    first = Built("n3", "nfs", Path("/a"), info={
        "server": {"server": "started by volbench", "threads": 4}})
    second = Built("n42", "nfs", Path("/b"), info={"server": {"server": "already running"}})
    action = nfs.stop(FaultSpec(5, "stop", target="n42"), second, {"n3": first, "n42": second})
    assert action.data == {"threads": 4}


def test_iscsi_cut_switches_lios_portal_group_off_and_on(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.faults import iscsi

    iqn = "iqn.2024-01.org.volbench:vb-i1"
    monkeypatch.setattr(iscsi, "CONFIGFS", tmp_path)
    built = Built("i1", "iscsi", None, "/dev/sdb", info={
        "server": {"server": "lio", "iqn": iqn}, "iqn": iqn, "portal": "127.0.0.1:3260",
        "session": {"Recovery Timeout": "15"}})
    action = iscsi.cut(FaultSpec(5, "cut", target="i1"), built)
    switch = tmp_path / "iscsi" / iqn / "tpgt_1" / "enable"
    assert action.apply_commands() == [Command(path=str(switch), text="0")]
    assert action.facts == {"replacement_timeout_s": "15", "portal": "127.0.0.1:3260"}
    assert action.undo_commands(action.data) == []  # the target is gone: nothing to switch
    switch.parent.mkdir(parents=True)
    switch.write_text("0")
    assert action.undo_commands(action.data) == [Command(path=str(switch), text="1")]
    tgt = Built("i2", "iscsi", None, "/dev/sdc", info={"server": {"server": "tgt"}, "iqn": iqn})
    with pytest.raises(FaultError, match="set server: lio"):
        iscsi.cut(FaultSpec(5, "cut", target="i2"), tgt)
