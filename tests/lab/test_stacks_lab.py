"""Every storage stack built, used by fio and torn down inside the lab VM, in one boot.

The guest runs one Python process (GUEST_SCRIPT) that
1. runs `volbench run` on ALL: every layout (LVM linear span, striped, thin volume, thin
   pool, thin snapshot; md RAID0 and RAID1; NFSv4.2 on another target and NFSv3 on a disk
   of its own; iSCSI through LIO with xfs and through tgt raw; a disk image on the LIO LUN's
   filesystem as a loop disk), a 3-second fio on each (disks capped at CAP IOPS),
   then looks at the guest: no VG, md array, export, session, mount, loop device, cgroup,
   daemon, LIO target or journal may be left;
2. starts `volbench run` on KILL (thin snapshot with a blkio limit, RAID10, NFSv3, LIO and
   tgt with filesystems) on the same disks (`wipe: true`), SIGKILLs it in the middle of a
   run, records what the dead process left, runs `volbench cleanup` and looks again.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from support import need_lab
from volbench.config.lab import DEFAULT_CLASSES, DiskClass
from volbench.lab import LabDisk, LabSpec, run_in_vm
from volbench.store.db import Store

MiB = 1024**2
D = "/dev/disk/by-id/virtio-{}".format
# xfs needs 300 MiB: a thin pool takes 90 % of a disk, its volume all of the pool.
DISK_SIZE = 400 * MiB
# Every disk capped at 150 IOPS, so two of them (a stripe, RAID0, RAID1's two mirrors: 300)
# stay within what the emulated guest delivers on a busy host: at the standard class's 500,
# a stripe read 646 IOPS for its 1000 on a host at load 8-10 with a second VM beside it
# (2026-11-28), and the check "a stripe is twice one disk" failed for want of CPU, not of
# striping. The faults step's disks are capped the same way for the same reason.
CAP = 150
CLASS = DiskClass("stack", iops=CAP, bps=50 * MiB)
DISKS = ("p1", "l1", "l2", "t1", "t2", "n1", "o1", "s1", "m1", "m2", "m3", "m4", "f1", "i1", "i2")
# ramp_time: QEMU's throttle lets a short burst through at the start of each run.
FIO = {
    "name": "r",
    "tool": "fio",
    "rw": "randread",
    "bs": "4k",
    "iodepth": 8,
    "size": "32M",
    "options": {"ramp_time": "1"},
}

ALL: dict[str, Any] = {
    "name": "stacks-all",
    "targets": [
        {"name": "plain", "type": "disk", "device": D("p1"), "fs": "xfs"},
        {"name": "span", "type": "lvm", "devices": [D("l1"), D("l2")]},
        {
            "name": "striped",
            "type": "lvm",
            "layout": "striped",
            "stripe_size": "64k",
            "devices": [D("t1"), D("t2")],
        },
        {"name": "thin", "type": "lvm", "layout": "thin", "devices": [D("n1")]},
        {"name": "pool", "type": "lvm", "layout": "thin-pool", "fs": "none", "devices": [D("o1")]},
        {
            "name": "snap",
            "type": "lvm",
            "layout": "thin-snapshot",
            "prefill": True,
            "fs": "ext4",  # half a 360 MiB pool: below xfs's 300 MiB minimum
            "devices": [D("s1")],
        },
        {
            "name": "raid0",
            "type": "mdraid",
            "level": "raid0",
            "chunk_size": "64k",
            "devices": [D("m1"), D("m2")],
        },
        {
            "name": "raid1",
            "type": "mdraid",
            "level": "raid1",
            "fs": "none",
            "devices": [D("m3"), D("m4")],
        },
        {"name": "nfs4", "type": "nfs", "on": ["plain"], "version": "4.2"},
        {"name": "nfs3", "type": "nfs", "device": D("f1"), "version": "3"},
        {"name": "lio", "type": "iscsi", "device": D("i1"), "fs": "xfs"},
        {"name": "lun", "type": "disk", "device": D("i2"), "fs": "none"},
        {"name": "tgt", "type": "iscsi", "on": ["lun"], "server": "tgt", "fs": "none"},
        # seed 003's datastore: a disk image on the iSCSI LUN's filesystem, as a loop disk
        {"name": "img", "type": "image", "on": ["lio"], "size": "64M", "allocation": "thick",
         "fs": "ext4"},
    ],
    "workloads": [{**FIO, "runtime": "3s"}],
    "repeat": 1,
}

KILL: dict[str, Any] = {
    "name": "stacks-kill",
    "targets": [
        {
            "name": "ksnap",
            "type": "lvm",
            "layout": "thin-snapshot",
            "wipe": True,
            "devices": [D("l1"), D("l2")],
            "limits": {"read_iops": 100},  # below the disks' cap: the cgroup binds
        },
        {
            "name": "kraid10",
            "type": "mdraid",
            "level": "raid10",
            "wipe": True,
            "devices": [D("m1"), D("m2"), D("m3"), D("m4")],
        },
        {"name": "knfs", "type": "nfs", "device": D("f1"), "wipe": True, "version": "3"},
        {"name": "klio", "type": "iscsi", "device": D("i1"), "wipe": True},
        {"name": "ktgt", "type": "iscsi", "device": D("i2"), "wipe": True, "server": "tgt"},
    ],
    # 8 s (was 20 s): the kill lands 3 s into the second run, inside its 1 s ramp + 8 s;
    # a longer run only waits longer for the same state to exist.
    "workloads": [{**FIO, "runtime": "8s"}],
    "repeat": 3,
}

GUEST_SCRIPT = r'''
import contextlib, io, json, os, signal, shutil, sys, time
from pathlib import Path

out = Path(sys.argv[1])
from volbench.cli import main as cli; from volbench.system import proc

DAEMONS = ("rpcbind", "rpc.mountd", "rpc.statd", "iscsid", "tgtd", "dbus-daemon", "fio")


def lines(argv):
    done = proc.run(argv, timeout=120, check=False)
    return [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]


def state():
    """What the storage stacks can leave behind, as the guest's own tools show it."""
    procs = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if os.path.basename(argv0) in DAEMONS:
                procs.append(os.path.basename(argv0))
    journals = Path("/run/volbench/journals")
    iscsi = Path("/sys/kernel/config/target/iscsi")
    threads = Path("/proc/fs/nfsd/threads")
    return {
        "vgs": [ln.strip() for ln in lines(["vgs", "--noheadings", "-o", "vg_name"])
                if ln.strip().startswith("vb_")],
        "dm": [ln for ln in lines(["dmsetup", "ls"]) if ln.startswith("vb_")],
        "md": [ln for ln in Path("/proc/mdstat").read_text().splitlines() if ln.startswith("md")],
        "exports": lines(["exportfs", "-v"]),
        "sessions": [ln for ln in lines(["iscsiadm", "-m", "session"]) if ln.startswith("tcp")],
        "mounts": [ln for ln in Path("/proc/mounts").read_text().splitlines()
                   if "/var/tmp/volbench" in ln or ln.split()[2] in ("nfs", "nfs4")],
        "loops": lines(["losetup", "-l", "-n"]),
        "cgroups": [p.name for p in Path("/sys/fs/cgroup/blkio").glob("volbench-*")],
        "daemons": sorted(procs),
        "lio": sorted(p.name for p in iscsi.glob("iqn.*")) if iscsi.exists() else [],
        "nfsd_threads": threads.read_text().strip() if threads.exists() else "0",
        "journals": sorted(p.name for p in journals.glob("*.jsonl")) if journals.exists() else [],
    }


results = {"before": state()}
started = time.monotonic()
results["run_code"] = cli.main(["run", str(out / "all.yaml"), "--db", "/srv/all.db", "--quiet"])
results["run_seconds"] = time.monotonic() - started
shutil.copyfile("/srv/all.db", out / "all.db")
results["after_run"] = state()

log = out / "kill.log"
started = time.monotonic()
vb = proc.start([sys.executable, "-m", "volbench.cli.main", "run", str(out / "kill.yaml"),
                 "--db", "/srv/kill.db"], log=log)
deadline = time.monotonic() + 900
while time.monotonic() < deadline and vb.alive():
    if any(ln.startswith("1/") for ln in vb.output().splitlines()):
        break
    time.sleep(0.5)
# "1/15" is printed as the first run ends: every target is built before the first run, so
# 3 s later the second run is under way with everything in place (waiting for "2/" only
# cost one more run).
time.sleep(3)
results["killed_after"] = vb.output().splitlines()[-3:]
results["killed_alive"] = vb.alive()
os.kill(vb.pid, signal.SIGKILL)
vb.popen.wait()
vb.stop()
results["kill_seconds"] = time.monotonic() - started
if Path("/srv/kill.db").exists():  # for the time breakdown (targets' build times)
    shutil.copyfile("/srv/kill.db", out / "kill.db")
time.sleep(1)
results["after_kill"] = state()
started = time.monotonic()
with contextlib.redirect_stdout(io.StringIO()) as said:
    results["cleanup_code"] = cli.main(["cleanup"])
results["cleanup_output"] = said.getvalue().splitlines()
results["cleanup_seconds"] = time.monotonic() - started
results["after_cleanup"] = state()
(out / "stacks.json").write_text(json.dumps(results, indent=1))
'''

EMPTY = (
    "vgs",
    "dm",
    "md",
    "exports",
    "sessions",
    "mounts",
    "loops",
    "cgroups",
    "daemons",
    "lio",
    "journals",
)


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One boot, fifteen lab disks: ALL run, then KILL killed and cleaned up."""
    need_lab()
    out = tmp_path_factory.mktemp("stackslab")
    (out / "checks.py").write_text(GUEST_SCRIPT)
    (out / "all.yaml").write_text(json.dumps(ALL))
    (out / "kill.yaml").write_text(json.dumps(KILL))
    work = Path("/var/tmp/volbench-tests") / f"stacks-{os.getpid()}"
    spec = LabSpec(disks=tuple(LabDisk(name, DISK_SIZE, CLASS.name) for name in DISKS),
                   classes={**DEFAULT_CLASSES, CLASS.name: CLASS})
    result = run_in_vm(
        spec, [sys.executable, str(out / "checks.py"), str(out)], out, timeout=1800, workdir=work
    )
    assert result.returncode == 0, result.console[-4000:]
    assert list(work.iterdir()) == []
    work.rmdir()
    checks = json.loads((out / "stacks.json").read_text())
    with Store(out / "all.db", create=False) as store:
        (row,) = store.experiments()
        targets = {t.name: t for t in store.targets(row.id)}
        runs = {r.target: r for r in store.runs([row.id], series=True)}
    return {"checks": checks, "targets": targets, "runs": runs, "result": result, "out": out}


def iops(run: Any) -> float:
    (value,) = [m.value for m in run.metrics if m.name == "iops" and m.tags.get("op") == "read"]
    return float(value)


def median_second(run: Any) -> float:
    """The median of the run's seconds (fio's log)."""
    (seconds,) = [[v for _, v in s.points] for s in run.parsed.series if s.name == "iops"]
    assert len(seconds) >= 3, seconds
    return float(statistics.median(seconds))


@pytest.mark.lab
@pytest.mark.slow
def test_every_layout_is_built_and_used(stacks: dict[str, Any]) -> None:
    checks, targets, runs = stacks["checks"], stacks["targets"], stacks["runs"]
    result = stacks["result"]
    print(f"stacks lab: boot {result.boot_seconds:.0f} s of {result.elapsed:.0f} s; ALL "
          f"{checks['run_seconds']:.0f} s, KILL until killed {checks['kill_seconds']:.0f} s, "
          f"cleanup {checks['cleanup_seconds']:.0f} s")
    failed = {n: t.error for n, t in targets.items() if t.status != "built"}
    assert failed == {}
    assert {n: (str(r.status), r.error) for n, r in runs.items()} == {
        n: ("ok", "") for n in targets
    }
    assert checks["run_code"] == 0
    plain = iops(runs["plain"])
    # At the cap: the median second (the whole-run mean of 3 s took in a starved second
    # of the nice-19 guest once: 141, beside a second VM at a host load of 7-8); the mean
    # stays bound by the cap from above.
    (seconds,) = [[v for _, v in s.points] for s in runs["plain"].parsed.series
                  if s.name == "iops"]
    assert len(seconds) >= 3, seconds
    # Upper bounds at the cap need no reference (no load makes a capped disk faster).
    # From below, the median second over the lower of the cap and the guest's reach in
    # this boot: the best median second of the striped and RAID0 runs (two disks of this
    # class, up to twice the cap), as test_lab_disks_run_at_their_class_cap judges a cap.
    reach = max(median_second(runs[name]) for name in ("striped", "raid0"))
    within("stacks: plain disk at its class's cap, median second (op/s)",
           statistics.median(seconds), high=1.05 * CAP, reference=str(seconds))
    within("stacks: plain disk's median second over the lower of its cap and the guest's "
           "reach", statistics.median(seconds) / min(CAP, reach), low=0.95,
           reference=f"striped/raid0 best median second {reach:.0f} op/s; {seconds}")
    within("stacks: plain disk, mean under its class's cap (op/s)", plain, high=1.05 * CAP)
    # The 32 MiB file sits on the span's first disk; stripes and RAID0 use both disks.
    # Paired: each layout against the plain disk of the same boot.
    within("stacks: span over plain", iops(runs["span"]) / plain, low=0.85, high=1.15)
    for name in ("striped", "raid0", "raid1"):
        within(f"stacks: {name} over plain", iops(runs[name]) / plain, low=1.7,
               reference=f"plain {plain:.0f} op/s")
    for name in ("thin", "pool", "snap", "nfs4", "nfs3", "lio", "tgt", "img"):
        within(f"stacks: {name} over plain", iops(runs[name]) / plain, low=0.5,
               reference=f"plain {plain:.0f} op/s")


@pytest.mark.lab
@pytest.mark.slow
def test_layouts_record_their_topology(stacks: dict[str, Any]) -> None:
    info = {n: t.info for n, t in stacks["targets"].items()}
    lvs = {lv["lv_name"]: lv for lv in info["striped"]["lvm"]["lvs"]}
    assert lvs["lv"]["segtype"] == "striped" and lvs["lv"]["stripes"] == "2"
    assert lvs["lv"]["stripe_size"] == str(64 * 1024)
    span = {lv["lv_name"]: lv for lv in info["span"]["lvm"]["lvs"]}["lv"]
    assert len(span["devices"]) == 2 and info["span"]["summary"].startswith("LVM linear span")
    assert any(step.startswith("lvcreate") and "-i 2" in step for step in info["striped"]["recipe"])
    snap = {lv["lv_name"]: lv for lv in info["snap"]["lvm"]["lvs"]}
    assert snap["snap"]["origin"] == "lv" and snap["snap"]["segtype"] == "thin"
    assert any("dd if=/dev/zero" in step for step in info["snap"]["recipe"])
    assert info["pool"]["device"].endswith(("-pool", "-pool-tpool"))
    assert info["raid0"]["md"]["fields"]["Chunk Size"] == "64K"
    assert info["raid1"]["md"]["fields"]["Raid Level"] == "raid1"
    assert "vers=4.2" in info["nfs4"]["mount"]["options"]
    assert info["nfs4"]["source"] == "127.0.0.1:/" and info["nfs4"]["export"][0]["options"]
    assert "vers=3" in info["nfs3"]["mount"]["options"]
    assert info["nfs3"]["server"]["server"] == "already running"  # nfs4 started it
    assert info["lio"]["session"]["disk"].startswith("/dev/sd")
    assert info["lio"]["server"]["server"] == "lio"
    assert info["tgt"]["server"]["targets"][0]["backing"] == [info["tgt"]["backing"]["device"]]
    assert info["img"]["mount"]["source"].startswith("/dev/loop")
    assert info["img"]["holder"]["fstype"] == "xfs"  # the LIO LUN's filesystem
    for name, item in info.items():
        assert item["topology"], name  # lsblk of the devices under it


@pytest.mark.lab
@pytest.mark.slow
def test_teardown_leaves_nothing_in_the_guest(stacks: dict[str, Any]) -> None:
    checks = stacks["checks"]
    for when in ("before", "after_run"):
        left = {k: checks[when][k] for k in EMPTY if checks[when][k]}
        assert left == {}, (when, left)
        assert checks[when]["nfsd_threads"] == "0"


@pytest.mark.lab
@pytest.mark.slow
def test_kill9_then_cleanup_leaves_nothing(stacks: dict[str, Any]) -> None:
    checks = stacks["checks"]
    assert checks["killed_alive"], checks["killed_after"]
    killed = checks["after_kill"]
    # The dead volbench left every kind of resource behind (else this test proves nothing).
    for key in ("vgs", "md", "exports", "sessions", "mounts", "cgroups", "lio", "journals"):
        assert killed[key], (key, killed)
    assert checks["cleanup_code"] == 0, checks["cleanup_output"]
    left = {k: checks["after_cleanup"][k] for k in EMPTY if checks["after_cleanup"][k]}
    assert left == {}
    assert checks["after_cleanup"]["nfsd_threads"] == "0"
