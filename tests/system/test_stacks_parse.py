"""Storage-stack tools' output (captured in the lab VM), the stack targets' fields, and the
refusal on a kernel without device-mapper. Everything here runs without the lab."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import DATA, need
from volbench.core.errors import ExperimentError, ParseError, ResourceError
from volbench.engine.experiment import parse_document
from volbench.system import daemons, journal, proc, procfs
from volbench.system.block import blockstack, stackparse
from volbench.system.recipe import Recipe
from volbench.targets import KINDS, BuildContext, nfs
from volbench.targets.iscsi import IscsiSpec
from volbench.targets.lvm import LvmSpec
from volbench.targets.mdraid import MdSpec, create_argv
from volbench.targets.nfs import NfsSpec

LVM = DATA / "lvm" / "2.03.16"
MDADM = DATA / "mdadm" / "4.2"
ISCSI = DATA / "iscsiadm" / "2.1.8"
EXPORTFS = DATA / "exportfs" / "nfs-utils-2.6.2"
TGTADM = DATA / "tgtadm" / "1.0.85"


def out(base: Path, case: str) -> str:
    return (base / f"{case}.stdout").read_text()


def code(base: Path, case: str) -> int:
    return int((base / f"{case}.exitcode").read_text())


# -- LVM ---------------------------------------------------------------------------------------


def test_lvs_rows_repeat_per_segment_and_merge_into_one_lv() -> None:
    rows = stackparse.lvm_report(out(LVM, "lvs-all"), "lv")
    span_rows = [r for r in rows if r["lv_name"] == "span"]
    assert len(span_rows) == 2  # one row per segment: vda then vdb
    merged = {lv["lv_name"]: lv for lv in stackparse.merge_lv_rows(rows)}
    assert merged["span"]["devices"] == ["/dev/vda", "/dev/vdb"]
    assert stackparse.lvm_int(merged["span"]["lv_size"]) == 1200 * 2**20
    assert merged["str"]["segtype"] == "striped" and merged["str"]["stripes"] == "2"
    assert stackparse.lvm_int(merged["str"]["stripe_size"]) == 64 * 1024
    assert merged["str"]["devices"] == ["/dev/vdb", "/dev/vdc"]
    assert merged["pool"]["segtype"] == "thin-pool" and merged["pool"]["devices"] == ["pool_tdata"]
    assert merged["thin"]["pool_lv"] == "pool"
    assert stackparse.lvm_percent(merged["thin"]["data_percent"]) == 10.0  # 20 of 200 MiB
    assert merged["snap"]["origin"] == "thin" and merged["snap"]["lv_active"] == "active"
    assert stackparse.lvm_percent(merged["span"]["data_percent"]) is None
    hidden = [name for name in merged if not stackparse.lv_visible(merged[name])]
    assert sorted(hidden) == ["[lvol0_pmspare]", "[pool_tdata]", "[pool_tmeta]"]


def test_lvs_segments_pvs_and_vgs() -> None:
    segs = stackparse.lvm_report(out(LVM, "lvs-segments"), "seg")
    span = [s for s in segs if s["lv_name"] == "span"]
    assert [stackparse.lvm_int(s["seg_start"]) for s in span] == [0, 1069547520]
    assert sum(stackparse.lvm_int(s["seg_size"]) or 0 for s in span) == 1200 * 2**20
    pvs = stackparse.lvm_report(out(LVM, "pvs"), "pv")
    assert [p["pv_name"] for p in pvs] == ["/dev/vda", "/dev/vdb", "/dev/vdc"]
    assert all(p["vg_name"] == "vbcap" for p in pvs)
    assert stackparse.lvm_int(pvs[0]["pv_free"]) == 0  # the span filled the first disk
    (vg,) = stackparse.lvm_report(out(LVM, "vgs"), "vg")
    assert vg["pv_count"] == "3" and stackparse.lvm_int(vg["vg_extent_size"]) == 4 * 2**20


def test_missing_vg_is_an_empty_report_with_exit_5() -> None:
    assert code(LVM, "vgs-missing") == 5
    assert stackparse.lvm_report(out(LVM, "vgs-missing"), "vg") == []
    assert stackparse.lvm_report(out(LVM, "lvs-missing"), "lv") == []
    assert 'Volume group "vbcap" not found' in (LVM / "vgs-missing.stderr").read_text()


def test_lvm_report_errors() -> None:
    with pytest.raises(ParseError, match="no JSON report"):
        stackparse.lvm_report("  Volume group not found\n", "lv")
    with pytest.raises(ParseError, match="no 'report' list"):
        stackparse.lvm_report('{"x": 1}', "lv")
    with pytest.raises(ValueError):
        stackparse.lvm_report(out(LVM, "vgs"), "volume")
    assert stackparse.lvm_devices("/dev/vdb(45),/dev/vdc(0)") == ["/dev/vdb", "/dev/vdc"]
    assert stackparse.lvm_devices("") == []


def test_a_pool_without_thin_volumes_is_the_thin_pool_target_itself() -> None:
    # What lvmops.pool_device relies on: no '-tpool' layer until a thin volume exists.
    table = out(LVM, "pool-only-dmsetup-table")
    types = {line.split(":")[0]: line.split()[3] for line in table.splitlines()}
    assert types["vbcap-pool"] == "thin-pool" and "vbcap-pool-tpool" not in types


# -- mdadm -------------------------------------------------------------------------------------


def test_mdadm_detail_raid0_and_raid10() -> None:
    r0 = stackparse.mdadm_detail(out(MDADM, "detail-raid0"))
    assert r0.device == "/dev/md/vbc0" and r0.level == "raid0"
    assert r0.chunk_size == "64K" and r0.state == "clean"
    assert [(m.device, m.role, m.state) for m in r0.members] == [
        ("/dev/vda", "0", "active sync"),
        ("/dev/vdb", "1", "active sync"),
    ]
    r10 = stackparse.mdadm_detail(out(MDADM, "detail-raid10-f2"))
    assert r10.level == "raid10" and r10.fields["Layout"] == "far=2"
    assert r10.fields["Raid Devices"] == "2"
    r1 = stackparse.mdadm_detail(out(MDADM, "detail-raid1-resync"))
    assert r1.chunk_size is None and r1.state == "clean, resyncing"
    assert r1.fields["Resync Status"] == "6% complete"


def test_mdadm_export_and_errors() -> None:
    exported = stackparse.mdadm_export(out(MDADM, "export-raid0"))
    assert exported["MD_LEVEL"] == "raid0" and exported["MD_DEVICES"] == "2"
    assert exported["MD_DEVICE_dev_vda_ROLE"] == "0"
    with pytest.raises(ParseError):
        stackparse.mdadm_detail((MDADM / "stop-missing.stderr").read_text())
    assert code(MDADM, "stop-missing") == 1


def test_mdstat() -> None:
    arrays = {a.name: a for a in stackparse.mdstat(out(MDADM, "mdstat-two"))}
    assert arrays["md126"].level == "raid10" and set(arrays["md126"].members) == {"vdc", "vdd"}
    assert arrays["md127"].state == "active" and arrays["md127"].members == ("vdb", "vda")
    (resyncing,) = stackparse.mdstat(out(MDADM, "mdstat-resync"))
    assert resyncing.level == "raid1"
    inactive = stackparse.mdstat("md127 : inactive vdb[1](S) vda[0](S)\n")
    assert inactive[0].level is None and inactive[0].members == ("vdb", "vda")


# -- iSCSI -------------------------------------------------------------------------------------


def test_iscsi_sessions() -> None:
    sessions = stackparse.iscsi_sessions(out(ISCSI, "session-two"))
    assert [(s.sid, s.portal, s.tpgt, s.target) for s in sessions] == [
        (1, "127.0.0.1:3262", 1, "iqn.2003-01.org.volbench:cap1"),
        (2, "127.0.0.1:3262", 1, "iqn.2003-01.org.volbench:cap2"),
    ]
    assert code(ISCSI, "session-none") == 21
    assert stackparse.iscsi_sessions(out(ISCSI, "session-none")) == []
    assert "No active sessions" in (ISCSI / "session-none.stderr").read_text()


def test_iscsi_session_detail_finds_attached_disks() -> None:
    views = {v.target: v for v in stackparse.iscsi_session_detail(out(ISCSI, "session-p3-two"))}
    assert views["iqn.2003-01.org.volbench:cap1"].disks == ("sda",)
    assert views["iqn.2003-01.org.volbench:cap2"].disks == ("sdb",)
    one = views["iqn.2003-01.org.volbench:cap1"]
    assert one.portal == "127.0.0.1:3262" and one.session_state == "LOGGED_IN"
    assert one.params["MaxXmitDataSegmentLength"] == "8192"
    assert one.params["Iface Initiatorname"].startswith("iqn.1993-08.org.debian")


def test_iscsi_session_detail_early_and_synthetic_unscanned() -> None:
    early = stackparse.iscsi_session_detail(out(ISCSI, "session-p3-early"))
    assert {v.target for v in early} == {
        "iqn.2003-01.org.volbench:cap1",
        "iqn.2003-01.org.volbench:cap2",
    }
    # Drop the 'Attached scsi disk' lines: what iscsiadm shows before the LUN scan.
    text = "\n".join(
        ln for ln in out(ISCSI, "session-p3-two").splitlines() if "Attached scsi disk" not in ln
    )
    assert all(v.disks == () for v in stackparse.iscsi_session_detail(text))


# -- exportfs, tgtadm --------------------------------------------------------------------------


def test_exportfs_v_short_and_long_paths() -> None:
    exports = stackparse.exportfs_v(out(EXPORTFS, "v-three"))
    long_path = "/srv/volbench/a-long-directory-name/volbench-nfs-export-1234"
    assert [(e.path, e.client) for e in exports] == [
        (long_path, "127.0.0.1"),
        ("/srv/e", "127.0.0.1"),
        ("/srv/e", "10.0.0.0/8"),
    ]
    assert exports[0].option("fsid") == "0" and exports[1].option("fsid") == "5"
    assert exports[2].option("ro") == "" and exports[2].option("rw") is None
    assert "no_root_squash" in exports[1].options and "root_squash" in exports[2].options
    assert stackparse.exportfs_v(out(EXPORTFS, "v-empty")) == []
    assert code(EXPORTFS, "u-missing") == 1


def test_tgtadm_targets() -> None:
    targets = stackparse.tgtadm_targets(out(TGTADM, "show-two"))
    assert [(t.tid, t.name, t.backing) for t in targets] == [
        (1, "iqn.2003-01.org.volbench:cap1", ("/dev/disk/by-id/virtio-c3",)),
        (2, "iqn.2003-01.org.volbench:cap2", ("/dev/disk/by-id/virtio-c4",)),
    ]


# -- the targets' fields -----------------------------------------------------------------------


def doc(*targets: dict[str, Any]) -> dict[str, Any]:
    return {"targets": list(targets), "workloads": [{"name": "f", "tool": "fio"}]}


def problems(*targets: dict[str, Any]) -> str:
    with pytest.raises(ExperimentError) as info:
        parse_document(doc(*targets))
    return str(info.value)


D = "/dev/disk/by-id/virtio-d{}".format


def test_lvm_fields() -> None:
    exp = parse_document(
        doc(
            {"name": "span", "type": "lvm", "devices": [D(1), D(2)]},
            {
                "name": "st",
                "type": "lvm",
                "layout": "striped",
                "stripe_size": "128k",
                "devices": [D(3), D(4), D(5)],
            },
            {
                "name": "thin",
                "type": "lvm",
                "layout": "thin",
                "disks": 1,
                "size": "512M",
                "lv_size": "80%FREE",
                "chunk_size": "128k",
                "zero": False,
                "prefill": True,
            },
            {"name": "one", "type": "lvm", "devices": [D(6)], "lv_size": "256M", "fs": "none"},
        )
    )
    span, st, thin, one = (exp.target(n) for n in ("span", "st", "thin", "one"))
    assert isinstance(span, LvmSpec) and span.layout == "linear" and span.source.n == 2
    assert span.lv_size == "100%FREE"
    assert isinstance(st, LvmSpec) and st.stripes == 3 and st.stripe_size == 128 * 1024
    assert isinstance(thin, LvmSpec) and thin.lv_size == "80%FREE" and thin.zero is False
    assert thin.source.loop_devices == 1 and thin.chunk_size == 128 * 1024 and thin.prefill
    assert isinstance(one, LvmSpec) and one.lv_size == str(256 * 2**20)
    assert not one.fs.mounted
    # thin layouts leave room for the pool's metadata
    exp = parse_document(doc({"name": "t", "type": "lvm", "layout": "thin", "devices": [D(1)]}))
    thin_default = exp.target("t")
    assert isinstance(thin_default, LvmSpec) and thin_default.lv_size == "90%FREE"


def test_lvm_field_problems() -> None:
    text = problems(
        {"name": "a", "type": "lvm", "layout": "striped", "stripes": 3, "devices": [D(1), D(2)]},
        {"name": "b", "type": "lvm", "stripes": 2, "devices": [D(3)]},
        {"name": "c", "type": "lvm", "prefill": True, "devices": [D(4)]},
        {"name": "d", "type": "lvm", "layout": "thin", "chunk_size": "96k", "devices": [D(5)]},
        {
            "name": "e",
            "type": "lvm",
            "layout": "striped",
            "stripe_size": "48k",
            "devices": [D(6), D(7)],
        },
        {"name": "f", "type": "lvm", "layout": "mirror", "devices": [D(8)]},
        {"name": "g", "type": "lvm", "devices": ["/dev/sdb"]},
        {"name": "h", "type": "lvm", "layout": "thin-pool", "prefill": True, "devices": [D(9)]},
    )
    assert "targets[0].stripes: 3 stripes need 2..2 disks" in text
    assert "targets[1].stripes: only applies to layout: striped" in text
    assert "targets[2].prefill: only applies to thin layouts" in text
    assert "targets[3].chunk_size: a thin pool chunk is a multiple of 64k" in text
    assert "targets[4].stripe_size: must be a power of two" in text
    assert "targets[5].layout: 'mirror' is not one of" in text
    assert "'/dev/sdb' is not a stable name" in text
    assert "targets[7].prefill: the pool device is not thin" in text


def test_mdraid_fields_and_argv() -> None:
    exp = parse_document(
        doc(
            {
                "name": "r10",
                "type": "mdraid",
                "level": 10,
                "layout": "f2",
                "chunk_size": "64k",
                "devices": [D(1), D(2), D(3), D(4)],
            },
            {
                "name": "r1",
                "type": "mdraid",
                "level": "raid1",
                "assume_clean": False,
                "disks": 2,
                "size": "256M",
            },
        )
    )
    r10, r1 = exp.target("r10"), exp.target("r1")
    assert isinstance(r10, MdSpec) and isinstance(r1, MdSpec)
    assert create_argv(r10, "/dev/md/x", ["/dev/vda", "/dev/vdb"]) == [
        "mdadm",
        "--create",
        "/dev/md/x",
        "--run",
        "--level=raid10",
        "--raid-devices=2",
        "--metadata=1.2",
        "--chunk=64",
        "--layout=f2",
        "--assume-clean",
        "/dev/vda",
        "/dev/vdb",
    ]
    assert "--assume-clean" not in create_argv(r1, "/dev/md/y", ["/dev/loop0", "/dev/loop1"])
    text = problems(
        {"name": "a", "type": "mdraid", "level": 5, "devices": [D(1), D(2), D(3)]},
        {"name": "b", "type": "mdraid", "level": 1, "chunk_size": "64k", "devices": [D(4), D(5)]},
        {"name": "c", "type": "mdraid", "devices": [D(6)]},
        {"name": "d", "type": "mdraid", "layout": "f2", "devices": [D(7), D(8)]},
    )
    assert "targets[0].level: '5' is not one of: raid0, raid1, raid10" in text
    assert "targets[1].chunk_size: raid1 has no chunks" in text
    assert "targets[2].devices: this target takes 2..64 disks, got 1" in text
    assert "targets[3].layout: only raid10 has a layout" in text


def test_nfs_and_iscsi_fields() -> None:
    exp = parse_document(
        doc(
            {"name": "store", "type": "disk", "device": D(1)},
            {"name": "n4", "type": "nfs", "on": ["store"], "version": 4.1},
            {
                "name": "n3",
                "type": "nfs",
                "device": D(2),
                "version": 3,
                "fs": "ext4",
                "mount_options": ["nconnect=2"],
            },
            {"name": "raw", "type": "disk", "device": D(3), "fs": "none"},
            {"name": "lio", "type": "iscsi", "on": ["raw"]},
            {"name": "tgt", "type": "iscsi", "device": D(4), "server": "tgt", "fs": "none"},
        )
    )
    n4, n3 = exp.target("n4"), exp.target("n3")
    assert isinstance(n4, NfsSpec) and n4.version == "4.1" and n4.v4 and n4.source is None
    assert n4.on == ("store",) and "no_root_squash" in n4.export_options
    assert isinstance(n3, NfsSpec) and not n3.v4 and n3.fs.fs == "ext4"
    assert n3.source is not None and n3.source.listed[0].path == D(2)
    # mount_options are the NFS client's; the filesystem under the export (ext4 here,
    # which knows no nconnect=) is mounted without them.
    assert n3.mount_options == ("nconnect=2",) and n3.fs.mount_options == ()
    lio, tgt = exp.target("lio"), exp.target("tgt")
    assert isinstance(lio, IscsiSpec) and isinstance(tgt, IscsiSpec)
    assert lio.port == 3260 and tgt.port == 3261 and tgt.server == "tgt"
    text = problems(
        {"name": "store", "type": "disk", "device": D(1)},
        {"name": "a", "type": "nfs", "on": ["store"], "device": D(2)},
        {"name": "b", "type": "nfs", "version": "5", "disks": 1},
        {"name": "c", "type": "nfs", "on": ["store"], "limits": {"read_iops": 100}},
        {"name": "d", "type": "nfs", "on": ["store"], "mount_options": ["vers=3"]},
        {"name": "e", "type": "iscsi", "on": ["store"], "portal": "10.1.1.1:3260"},
        {"name": "f", "type": "nfs", "on": ["store", "a"]},
    )
    assert "targets[1].device: give either on: or a disk of its own" in text
    assert "targets[2].version: '5' is not one of: 3, 4, 4.0, 4.1, 4.2" in text
    assert "targets[3].limits: blkio limits cannot throttle NFS" in text
    assert "targets[4].mount_options: the NFS version is set by version:" in text
    assert "targets[5].portal: only a portal on this machine" in text
    assert "targets[6].on: type nfs is built on 0 to 1 targets, got 2" in text


def test_nfs_client_in_a_namespace_fields() -> None:
    hop = {"name": "hop", "type": "nfs", "on": ["store"], "client_netns": "vb1"}
    exp = parse_document(
        doc(
            {"name": "store", "type": "disk", "device": D(1)},
            {**hop, "server_address": "10.213.1.1"},
        )
    )
    spec = exp.target("hop")
    assert isinstance(spec, NfsSpec)
    assert spec.client_netns == "vb1" and spec.server_address == "10.213.1.1"
    # The mount runs with the namespace's network only: its mounts must stay ours.
    assert nfs.in_client_netns(spec, ["mount", "x"]) == [
        "nsenter",
        "--net=/run/netns/vb1",
        "mount",
        "x",
    ]
    text = problems(
        {"name": "store", "type": "disk", "device": D(1)},
        hop,
        {**hop, "name": "bad", "client_netns": "../x", "server_address": "nfs.example"},
    )
    assert "targets[1].server_address: client_netns needs the address" in text
    assert "targets[2].client_netns: '../x' is not a network namespace name" in text
    assert "targets[2].server_address: 'nfs.example' is not an IP address" in text


def test_nfs_client_namespace_that_is_missing_is_named(tmp_path: Path) -> None:
    spec = NfsSpec("hop", "nfs", client_netns="volbench-no-such-ns", server_address="10.0.0.1")
    with pytest.raises(ResourceError, match="namespace volbench-no-such-ns does not exist"):
        nfs.client_address(spec)
    assert nfs.client_address(NfsSpec("lo", "nfs")) == "127.0.0.1"


def test_kinds_are_registered_with_their_undo() -> None:
    for name in ("lvm", "mdraid", "nfs", "iscsi"):
        assert name in KINDS
    import volbench.engine.kinds  # noqa: F401

    for kind in (
        "lvm-vg",
        "lvm-lv",
        "md-array",
        "nfs-export",
        "nfs-mount",
        "nfsd-threads",
        "nfsd-fs",
        "iscsi-target",
        "iscsi-session",
    ):
        assert kind in journal.UNDO, kind


def test_undos_of_resources_never_created_do_nothing(tmp_path: Path) -> None:
    """Journaled, then killed before creation: cleanup must pass over them quietly."""
    need(os.geteuid() == 0, "the undos run the storage tools, which need root")
    import volbench.engine.kinds  # noqa: F401

    for kind, data in (
        ("md-array", {"name": "vb_never_1", "members": [{"device": str(tmp_path / "none")}]}),
        (
            "iscsi-target",
            {"server": "lio", "iqn": "iqn.2003-01.org.volbench:never", "backstore": "vb_never_1"},
        ),
        ("nfs-mount", {"mountpoint": str(tmp_path / "mnt")}),
    ):
        journal.UNDO[kind](data)
    assert blockstack.current_member({"device": "/dev/loop0", "backing": None}) is None


@pytest.mark.root
def test_lvm_without_device_mapper_names_the_lab(tmp_path: Path) -> None:
    need(not blockstack.device_mapper_present(), "this kernel has device-mapper")
    exp = parse_document(doc({"name": "span", "type": "lvm", "disks": 2, "size": "64M"}))
    spec = exp.target("span")
    work = tmp_path / "work"
    work.mkdir()
    with journal.opened("test") as jrnl, jrnl.scope() as scope:
        ctx = BuildContext(scope, Recipe(), work)
        with pytest.raises(ResourceError) as info, KINDS["lvm"].build(spec, ctx):
            pass
    text = str(info.value)
    assert "device-mapper" in text and "volbench lab run" in text
    assert list(work.iterdir()) == []  # refused before any disk was made


# -- daemons (real processes, no lab needed) ---------------------------------------------------


def test_a_daemon_outlives_its_starter_and_its_undo_ends_it(tmp_path: Path) -> None:
    """Started through setsid --fork (so a SIGKILLed volbench does not take it along),
    journaled with PID and start time; the scope's teardown ends it."""
    argv = ["sleep", "301"]
    with journal.opened("test") as jrnl:
        scope = jrnl.scope()
        pid = daemons.start(scope, Recipe(), argv, tmp_path / "d.log", lambda: True, what="x")
        assert procfs.start_ticks(pid) is not None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:3] == [b"301", b""] and cmdline[0].endswith(b"/sleep")
        assert os.getsid(pid) == pid  # a session of its own
        (entry,) = [e for e in scope._entries if e.kind == "daemon"]
        assert entry.data["pid"] == pid and entry.data["start"] > entry.data["since"] - 1
        scope.close()
    assert procfs.start_ticks(pid) is None


def test_a_daemon_journaled_without_its_pid_is_found_and_ended(tmp_path: Path) -> None:
    """volbench killed between starting a daemon and recording its PID: cleanup finds it
    by its exact command line and a start after the journal entry."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    data = {"argv": [sleep, "302"], "since": procfs.ticks_now()}
    starter = proc.start(["setsid", "--fork", sleep, "302"], log=tmp_path / "d.log")
    starter.popen.wait(timeout=30)
    found = daemons.wait_for(lambda: daemons.find(data["argv"], int(data["since"])), 10)
    assert found is not None
    assert daemons.find(data["argv"], found[1] + 10**9) is None  # started before: not ours
    journal.UNDO["daemon"](data)
    assert procfs.start_ticks(found[0]) is None
    journal.UNDO["daemon"](data)  # idempotent: nothing left to end
