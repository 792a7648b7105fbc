"""Each action's commands, made from the fault and the target as built (run nowhere here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.config.faults import FaultSpec
from volbench.faults import FaultError, dm, md, nfs, thin, throttle
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
    monkeypatch.setattr(iscsi, "SYSFS", tmp_path / "sys")
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
    assert action.sample is not None
    assert action.sample() == {"iscsi_path": {"session": None, "disk": None}}  # not here
    tgt = Built("i2", "iscsi", None, "/dev/sdc", info={"server": {"server": "tgt"}, "iqn": iqn})
    with pytest.raises(FaultError, match="set server: lio"):
        iscsi.cut(FaultSpec(5, "cut", target="i2"), tgt)


# `dmsetup table` of an LVM linear LV on one lab disk (the lab test records it as a fact).
LINEAR = "0 516096 linear 254:16 2048"


def lv_built() -> Built:
    return Built("lv1", "lvm", None, "/dev/vb_lv1_1/lv", info={
        "device": "/dev/vb_lv1_1/lv", "layout": "linear"})


@pytest.mark.parametrize(("action", "table"), [
    ("delay", "0 516096 delay 254:16 2048 50"),
    ("errors", "0 516096 flakey 254:16 2048 0 1")])
def test_dm_faults_swap_the_lvs_table_for_one_over_the_same_blocks(
        monkeypatch: pytest.MonkeyPatch, action: str, table: str) -> None:
    monkeypatch.setattr(dm, "dm_name", lambda device: "vb_lv1_1-lv")
    monkeypatch.setattr(dm, "table", lambda name: LINEAR)
    got = dm.start(FaultSpec(5, action, target="lv1", duration=4,
                             options={"delay_ms": 50} if action == "delay" else {}), lv_built())
    assert got.apply_commands() == [
        Command(("modprobe", dm.MODULES[action])),
        Command(("dmsetup", "suspend", "--noudevsync", "vb_lv1_1-lv")),
        Command(("dmsetup", "load", "vb_lv1_1-lv", "--table", table)),
        Command(("dmsetup", "resume", "--noudevsync", "vb_lv1_1-lv"))]
    assert got.data == {"name": "vb_lv1_1-lv", "table": LINEAR}
    assert got.facts["fault_table"] == table


def test_dm_faults_refuse_an_lv_that_is_not_one_linear_stretch() -> None:
    span = "0 100 linear 254:16 2048\n100 100 linear 254:32 2048"
    with pytest.raises(FaultError, match=r"table has 2 line\(s\) of linear"):
        dm.faulty_table(span, "delay")
    with pytest.raises(FaultError, match=r"1 line\(s\) of striped"):
        dm.faulty_table("0 200 striped 2 128 254:16 2048 254:32 2048", "errors")


def test_dm_undo_loads_the_own_table_back_and_always_resumes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dm.Path, "exists", lambda self: True)
    data = {"name": "vb_lv1_1-lv", "table": LINEAR}
    monkeypatch.setattr(dm, "table", lambda name: "0 516096 delay 254:16 2048 50")
    assert [c.argv[1] for c in dm._undo_commands(data)] == ["suspend", "load", "resume"]
    assert dm._undo_commands(data)[1].argv[-1] == LINEAR
    # The load failed after the suspend: the table is the LV's own, but it must resume.
    monkeypatch.setattr(dm, "table", lambda name: LINEAR)
    assert dm._undo_commands(data) == [Command(("dmsetup", "resume", "--noudevsync",
                                                "vb_lv1_1-lv"))]
    monkeypatch.setattr(dm.Path, "exists", lambda self: False)
    assert dm._undo_commands(data) == []  # the LV was torn down: nothing left of it


# A thin pool's `dmsetup status` / `dmsetup table` (the kernel's thin-provisioning.rst
# format): 1024 of 4800 64k chunks used, queueing when full.
POOL_STATUS = ("0 614400 thin-pool 1 11/4096 1024/4800 - rw discard_passdown "
               "queue_if_no_space - 1024")
POOL_TABLE = "0 614400 thin-pool 254:1 254:2 128 0 0"


def test_iscsi_path_state_reads_the_session_and_its_disk_from_sysfs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.faults import iscsi

    iqn = "iqn.2003-01.org.volbench:vb-il-1"
    monkeypatch.setattr(iscsi, "SYSFS", tmp_path)
    for n, name, state in ((1, "iqn.2003-01.org.volbench:vb-other", "LOGGED_IN"),
                           (2, iqn, "FAILED")):
        session = tmp_path / "class" / "iscsi_session" / f"session{n}"
        session.mkdir(parents=True)
        (session / "targetname").write_text(name + "\n")
        (session / "state").write_text(state + "\n")
    device = tmp_path / "block" / "sdc" / "device"
    device.mkdir(parents=True)
    (device / "state").write_text("transport-offline\n")
    assert iscsi.path_state(iqn, "/dev/sdc") == {"session": "FAILED",
                                                 "disk": "transport-offline"}


def test_thin_pool_status_gives_free_chunks_and_the_full_mode() -> None:
    assert thin.pool_status(POOL_STATUS, POOL_TABLE) == {
        "free_chunks": 3776, "chunks": 4800, "chunk_bytes": 65536, "mode": "rw",
        "when_full": "queue_if_no_space"}
    full = POOL_STATUS.replace("1024/4800 - rw", "4800/4800 - out_of_data_space").replace(
        "queue_if", "error_if")
    assert thin.pool_status(full, POOL_TABLE)["mode"] == "out_of_data_space"
    with pytest.raises(FaultError, match="not a thin-pool status"):
        thin.pool_status("0 614400 linear", POOL_TABLE)


def thin_lvm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, when_full: str = "queue",
             exists: bool = True) -> Path:
    """LVM's view of a thin pool (its lv_when_full setting, the filler and snapshot there
    or not) and the kernel's no_space_timeout (60 s) in a file of the test's own."""
    param = tmp_path / "no_space_timeout"
    param.write_text("60\n")
    monkeypatch.setattr(thin, "NO_SPACE_TIMEOUT", param)
    monkeypatch.setattr(thin.lvmops, "lv_exists", lambda vg, lv: exists or lv == "pool")
    monkeypatch.setattr(thin.lvmops, "lv_value", lambda vg, lv, column: when_full)
    return param


@pytest.mark.parametrize(("asked", "final"), [(1, "y"), (0, "n"), (None, "n")])
def test_thin_exhaust_snapshots_then_fills_the_pool_in_error_mode(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, asked: int | None, final: str) -> None:
    monkeypatch.setattr(thin, "_pool_name", lambda vg: "vb_t1_1-pool-tpool")
    monkeypatch.setattr(thin, "_status", lambda name: thin.pool_status(POOL_STATUS, POOL_TABLE))
    thin_lvm(monkeypatch, tmp_path)
    built = Built("t1", "lvm", None, "/dev/vb_t1_1/lv",
                  info={"vg": "vb_t1_1", "lv": "lv", "layout": "thin"})
    got = thin.exhaust(FaultSpec(8, "exhaust", target="t1", duration=6, options={} if asked
                                 is None else {"error_if_no_space": asked}), built)
    argv = [c.argv for c in got.apply_commands()]
    # The filler before the snapshot: after it the workload fills the pool by itself, and
    # LVM makes no thin volume in a full pool (the lab's second boot: exit code 5).
    assert argv[0] == ("lvcreate", "-q", "-V", f"{4800 * 65536}b", "--thinpool",
                       "vb_t1_1/pool", "-n", "vbfill")
    assert argv[1] == ("lvchange", "--errorwhenfull", "y", "vb_t1_1/pool")  # the pool queued
    assert argv[2] == ("lvcreate", "-q", "-s", "vb_t1_1/lv", "-n", "vbsnap")
    assert argv[3][:3] == ("fio", "--name=fill", "--filename=/dev/vb_t1_1/vbfill")
    assert "--bs=65536" in argv[3] and "--fill_device=1" in argv[3]
    # LVM refuses to set the mode the pool has already (seen in the lab: exit code 5).
    assert argv[4:] == ([] if final == "y" else
                        [("lvchange", "--errorwhenfull", "n", "vb_t1_1/pool")])
    assert got.data == {"vg": "vb_t1_1", "pool": "vb_t1_1-pool-tpool", "errorwhenfull": "n",
                        "no_space_timeout": 60}
    assert got.facts["when_full"] == ("error_if_no_space" if final == "y"
                                      else "queue_if_no_space")
    assert got.facts["no_space_timeout_s"] == 60  # the kernel's, recorded though not asked


def test_thin_exhaust_sets_no_space_timeout_before_the_fill_and_free_puts_it_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(thin, "_pool_name", lambda vg: "vb_t1_1-pool-tpool")
    monkeypatch.setattr(thin, "_status", lambda name: thin.pool_status(POOL_STATUS, POOL_TABLE))
    param = thin_lvm(monkeypatch, tmp_path)
    built = Built("t1", "lvm", None, "/dev/vb_t1_1/lv",
                  info={"vg": "vb_t1_1", "lv": "lv", "layout": "thin"})
    got = thin.exhaust(FaultSpec(8, "exhaust", target="t1", options={
        "error_if_no_space": 0, "no_space_timeout": 8}), built)
    # The kernel reads it when the pool runs out of space: it must be there before the fill.
    assert got.apply_commands()[0] == Command(path=str(param), text="8")
    assert got.facts["no_space_timeout_s"] == 8 and got.data["no_space_timeout"] == 60
    param.write_text("8\n")  # applied
    undo = got.undo_commands(got.data)
    assert undo[-1] == Command(path=str(param), text="60")
    assert [c.argv for c in undo[:2]] == [
        ("lvremove", "-q", "-f", "-y", "vb_t1_1/vbfill", "vb_t1_1/vbsnap"),
        ("lvchange", "--refresh", "vb_t1_1/pool")]
    # After the timeout the kernel's status reads error_if_no_space, LVM's setting is still
    # queue: no lvchange --errorwhenfull n, which LVM would refuse as "already set".
    assert len(undo) == 3
    param.write_text("60\n")
    monkeypatch.setattr(thin.lvmops, "lv_exists", lambda vg, lv: False)  # all torn down
    assert got.undo_commands(got.data) == []


def test_thin_free_removes_the_filler_and_snapshot_and_puts_the_mode_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = {"vg": "vg1", "pool": "vg1-pool-tpool", "errorwhenfull": "n"}
    thin_lvm(monkeypatch, tmp_path, when_full="error")
    assert [c.argv for c in thin._undo_commands(data)] == [
        ("lvremove", "-q", "-f", "-y", "vg1/vbfill", "vg1/vbsnap"),
        ("lvchange", "--refresh", "vg1/pool"),
        ("lvchange", "--errorwhenfull", "n", "vg1/pool")]
    thin_lvm(monkeypatch, tmp_path, when_full="queue", exists=False)
    assert thin._undo_commands(data) == []  # done already: the mode is as it was


def test_thin_exhaust_refuses_a_target_that_is_not_a_thin_volume() -> None:
    with pytest.raises(FaultError, match="not a thin volume"):
        thin.exhaust(FaultSpec(8, "exhaust", target="lv1"), lv_built())
