"""The lab VM booted for real (its spec, QEMU options and guest script without a boot are
tests/unit/test_lab_config.py).

Boots cost ~20 s plus emulation, so each slow test shares one boot among many checks:
- `volbench lab run` of a two-disk, two-class experiment (CLI end to end, database back,
  IOPS within ±3 % of each class's cap);
- one guest script with the guard's refusals that need device-mapper and md, and the
  guest's cache drop and blkio throttle (a step of the shared boot, tests/lab/conftest.py);
- kill -9 of the host volbench mid-run, then `volbench cleanup`;
- a boot timeout and a boot failure, reported with the console tail.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from support import LAB_EXPERIMENT as EXPERIMENT
from support import need, need_lab
from volbench.config.lab import DEFAULT_CLASSES, WRITE_BACK, DiskClass
from volbench.engine import kinds
from volbench.lab import LabBootError, LabDisk, LabSpec, run_in_vm
from volbench.lab import kernel as lab_kernel
from volbench.lab.vm import find_vng
from volbench.store.db import Store
from volbench.system import proc
from volbench.system.host import tools

MiB = 1024**2


# -- real boots ----------------------------------------------------------------------------------


def qemu_pids(marker: str) -> list[int]:
    """QEMU processes whose command line mentions `marker` (our work directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmdline and marker in cmdline:
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`volbench lab run` of EXPERIMENT through the CLI (one boot for several tests)."""
    need_lab()
    base = tmp_path_factory.mktemp("labrun")
    work = Path("/var/tmp/volbench-tests") / f"lab-{os.getpid()}"
    (base / "exp.yaml").write_text(EXPERIMENT)
    db = base / "results.db"
    env = {"VOLBENCH_STATE_DIR": str(base / "state")}
    started = time.monotonic()
    done = proc.run(
        [
            sys.executable,
            "-m",
            "volbench.cli.main",
            "lab",
            "run",
            str(base / "exp.yaml"),
            "--db",
            str(db),
            "--workdir",
            str(work),
        ],
        timeout=900,
        env=env,
        check=False,
    )
    yield {
        "done": done,
        "db": db,
        "base": base,
        "work": work,
        "env": env,
        "seconds": time.monotonic() - started,
    }
    os.rmdir(work)  # empty by now, or the test below has failed


@pytest.mark.lab
@pytest.mark.slow
def test_lab_run_brings_results_back(lab_run: dict[str, Any]) -> None:
    done = lab_run["done"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"results in {lab_run['db']}" in done.stdout
    assert (lab_run["base"] / "results-report.md").exists()
    console = (lab_run["base"] / "results-lab-console.log").read_text()
    assert "3 ok" in console  # the guest's own summary line
    with Store(lab_run["db"], create=False) as store:
        (row,) = store.experiments()
        assert row.name == "lab-classes" and row.status == "done"
        targets = {t.name: t for t in store.targets(row.id)}
        runs = {r.target: r for r in store.runs([row.id])}
    # the lab's disks are recorded with the caps of their (here default) classes
    recorded = {d["name"]: d for d in row.environment["lab"]["disks"]}
    assert recorded["d1"]["caps"] == {"iops": 500, "bps": 50 * MiB}
    assert recorded["d2"]["caps"] == {"iops": 2000, "bps": 200 * MiB}
    assert recorded["d3"]["caps"] == {}
    assert {d["write_cache"] for d in recorded.values()} == {"write-through"}
    for name, by_id in (("standard", "virtio-d1"), ("fast", "virtio-d2")):
        disk = targets[name].info["disk"]
        assert disk["listed"] == f"/dev/disk/by-id/{by_id}" and disk["source"] == "listed"
        assert disk["device"].startswith("/dev/vd")
        assert list(targets[name].info["write_cache"].values()) == ["write through"]
        assert any("device guard passed" in s for s in targets[name].info["recipe"])
        assert str(runs[name].status) == "ok"


@pytest.mark.lab
@pytest.mark.slow
def test_the_guest_s_progress_reaches_the_host(lab_run: dict[str, Any]) -> None:
    """The guest's run writes its progress as events; the host draws them (here without
    a terminal: plain lines with the time left, cli/progress.py)."""
    done = lab_run["done"]
    lines = done.stderr.splitlines()
    assert any(re.fullmatch(r"3 runs planned, about \d+ s", line) for line in lines), done.stderr
    finished = [line for line in lines if re.fullmatch(
        r"[123]/3 (standard|fast|free) rand4k .*rep 1: read [\d.]+ op/s  \[.+ elapsed, .+ left\]",
        line)]
    assert len(finished) == 3, done.stderr
    assert "3 ok" in done.stdout  # the guest's console still comes through


@pytest.mark.lab
@pytest.mark.slow
def test_lab_disks_run_at_their_class_cap(lab_run: dict[str, Any]) -> None:
    """Each class's disk reads at its cap: never above it (+3 %, QEMU's throttle), and not
    below it (-3 %) unless the guest itself could not go faster at that moment, which the
    uncapped disk read seconds later shows (paired, issue 35): on a host at load ~10 the
    2000-IOPS class read 1760 and 1935 (beside a second VM), for want of emulated CPU,
    not of the throttle. Then the class must reach 97 % of what the guest delivered.
    "At the cap" is judged on the median second (the whole-run mean took in a starved
    second or two of the nice-19 guest: 0.957 of the cap once, beside a second VM at a
    host load of 7-8); the mean stays bound by the cap from above."""
    assert lab_run["done"].returncode == 0, lab_run["done"].stderr
    with Store(lab_run["db"], create=False) as store:
        runs = {r.target: r for r in store.runs([store.experiments()[0].id], series=True)}

    def read_iops(name: str) -> float:
        (iops,) = [m.value for m in runs[name].metrics
                   if m.name == "iops" and m.tags.get("op") == "read"]
        assert iops is not None
        return float(iops)

    def median_second(name: str) -> tuple[float, list[float]]:
        (iops,) = [s for s in runs[name].parsed.series if s.name == "iops"]
        seconds = [v for _, v in iops.points]
        assert len(seconds) >= 4, seconds
        return statistics.median(seconds), seconds

    free, _ = median_second("free")
    for name, cap in (("standard", 500), ("fast", 2000)):
        within(f"lab class cap: {name}, over its cap", read_iops(name) / cap, high=1.03)
        median, seconds = median_second(name)
        within(f"lab class cap: {name}, median second over the lower of its cap and the "
               "guest's rate", median / min(cap, free), low=0.97,
               reference=f"uncapped disk {free:.0f} op/s (median second); seconds {seconds}")


@pytest.mark.lab
@pytest.mark.slow
def test_lab_run_leaves_nothing(lab_run: dict[str, Any]) -> None:
    assert list(lab_run["work"].iterdir()) == []  # images and the shared outdir are gone
    assert qemu_pids(str(lab_run["work"])) == []
    journals = lab_run["base"] / "state" / "journals"
    assert not journals.exists() or list(journals.iterdir()) == []


GUARD_SCRIPT = """
import json, os, sys
from pathlib import Path
from volbench.system.block import guard; from volbench.system import proc
from volbench.core.errors import UnsafeDevice

out, disk = Path(sys.argv[1]), "/dev/disk/by-id/virtio-{}".format
results = {}

def rule(name, path, wipe=False):
    try:
        guard.check(path, wipe=wipe)
        results[name] = None
    except UnsafeDevice as exc:
        results[name] = [exc.rule, str(exc)]

def run(*argv):
    proc.run(list(argv), timeout=300)

rule("fresh", disk("g1"))
run("pvcreate", "-q", disk("g1"))
rule("pv", disk("g1"))
rule("pv_wipe", disk("g1"), wipe=True)
run("vgcreate", "-q", "vbg", disk("g1"))
run("lvcreate", "-q", "-y", "-L", "8M", "-n", "lv0", "vbg")
rule("lv_holder", disk("g1"), wipe=True)
run("vgchange", "-q", "-an", "vbg")
run("vgremove", "-q", "-f", "vbg")
run("mdadm", "--create", "/dev/md/vbt", "--run", "--level=1", "--raid-devices=2",
    "--metadata=1.2", disk("g2"), disk("g3"))
rule("md_holder", disk("g2"), wipe=True)
run("mdadm", "--stop", "/dev/md/vbt")
rule("md_member", disk("g2"))
results["md_signatures"] = [s.type for s in guard.read_signatures(disk("g3"))[0]]
Path("/proc/sys/vm/drop_caches").write_text("3")
results["drop_caches"] = "ok"
cg = Path("/sys/fs/cgroup/blkio/vbtest")
cg.mkdir()
st = os.stat(os.path.realpath(disk("g4")))
(cg / "blkio.throttle.read_iops_device").write_text(
    "%d:%d 300" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
fio = proc.run(["fio", "--name=t", "--filename=" + disk("g4"), "--direct=1", "--rw=randread",
                "--bs=4k", "--iodepth=16", "--ioengine=libaio", "--runtime=6",
                "--ramp_time=1", "--time_based", "--output-format=json"],
               timeout=120, cgroup=cg)
results["blkio_iops"] = json.loads(fio.stdout)["jobs"][0]["read"]["iops"]
cg.rmdir()

def sysfs(path, name):
    return Path("/sys/class/block", os.path.basename(os.path.realpath(path)), name).read_text()

# A write-back disk (w1) gets a flush for every fsync; a write-through one (g4) gets none.
def writes(d, *sync):
    fio = proc.run(["fio", "--name=f", "--filename=" + disk(d), "--direct=1", "--rw=randwrite",
                    "--bs=4k", "--ioengine=psync", *sync, "--runtime=4", "--ramp_time=1",
                    "--time_based", "--output-format=json"], timeout=120)
    return json.loads(fio.stdout)["jobs"][0]["write"]["iops"]

for d in ("g4", "w1"):
    before = int(sysfs(disk(d), "stat").split()[15])  # flush requests completed
    iops = writes(d, "--fsync=1")
    results["flush_" + d] = {
        "write_cache": sysfs(disk(d), "queue/write_cache").strip(),
        "flushes": int(sysfs(disk(d), "stat").split()[15]) - before,
        "iops": iops,
    }
# g4 with an fsync per write between the same writes without fsync just before and just
# after: the same-moment reference for "fsync costs a write-through disk nothing".
results["paired_g4"] = {"before": writes("g4"), "fsync": writes("g4", "--fsync=1"),
                        "after": writes("g4")}
# an LV on write-through disks is write-through too: device-mapper has no flush to fan out
run("pvcreate", "-q", disk("g4"))
run("vgcreate", "-q", "vbw", disk("g4"))
run("lvcreate", "-q", "-y", "-L", "8M", "-n", "lv0", "vbw")
results["lv_write_cache"] = sysfs("/dev/vbw/lv0", "queue/write_cache").strip()
run("vgchange", "-q", "-an", "vbw")
run("vgremove", "-q", "-f", "vbw")
(out / "guard.json").write_text(json.dumps(results))
"""


# Five small disks for GUARD_SCRIPT (a step of the shared boot, tests/lab/conftest.py):
# g1-g4 of the default write-through class, w1 of a write-back one.
GUARD_DISKS = (*(LabDisk(f"g{i}", 64 * MiB) for i in range(1, 5)), LabDisk("w1", 64 * MiB, "wb"))
GUARD_CLASSES = {**DEFAULT_CLASSES, "wb": DiskClass("wb", iops=500, write_cache=WRITE_BACK)}


@pytest.fixture(scope="module")
def guard_in_lab(shared_boot: dict[str, Any]) -> dict[str, Any]:
    """The guard step of the shared boot: guard refusals with dm and md, cache drop, blkio,
    and what a write-back class (w1) changes against the default write-through one."""
    out, steps = shared_boot["out"], shared_boot["steps"]
    assert steps["guard"]["code"] == 0, (out / "console.log").read_text()[-3000:]
    return {"result": shared_boot["result"],
            "checks": json.loads((out / "guard.json").read_text())}


@pytest.mark.lab
@pytest.mark.slow
def test_guard_refuses_pv_lv_holder_and_md_in_the_lab(guard_in_lab: dict[str, Any]) -> None:
    checks = guard_in_lab["checks"]
    assert checks["fresh"] is None and checks["pv_wipe"] is None
    assert checks["pv"][0] == "LVM physical volume" and "LVM2_member" in checks["pv"][1]
    assert checks["lv_holder"][0] == "held by another device"
    assert "(vbg-lv0)" in checks["lv_holder"][1]
    assert checks["md_holder"][0] == "held by another device" and "md" in checks["md_holder"][1]
    assert checks["md_member"][0] == "md RAID member"
    assert checks["md_signatures"] == ["linux_raid_member"]


@pytest.mark.lab
@pytest.mark.slow
def test_guest_drops_caches_and_throttles_with_blkio(guard_in_lab: dict[str, Any]) -> None:
    checks, result = guard_in_lab["checks"], guard_in_lab["result"]
    assert checks["drop_caches"] == "ok"
    # The guest's 300-IOPS blkio cap: from above, a cap needs no reference (no load makes
    # a capped disk faster). From below, over the lower of 300 and the guest's reach
    # seconds later in this step (the median of its five fio runs on g4 and w1 outside the
    # cgroup, capped by their classes at 500), as test_lab_disks_run_at_their_class_cap
    # judges a class cap. That reach is QD1 writes, slower for a starved guest than the
    # QD16 reads here, so it can only lower the reference where the guest was slow.
    iops = checks["blkio_iops"]
    reach = statistics.median([checks["flush_g4"]["iops"], checks["flush_w1"]["iops"],
                               *checks["paired_g4"].values()])
    within("lab blkio cap 300 (op/s)", iops, high=1.05 * 300)
    within("lab blkio cap 300, over the lower of 300 and the guest's reach",
           iops / min(300, reach), low=0.95,
           reference=f"the guest's fio writes seconds later, median {reach:.0f} op/s")
    assert result.modules_missing == ()
    assert result.boot_seconds is not None and 0 < result.boot_seconds < result.elapsed


@pytest.mark.lab
@pytest.mark.slow
def test_write_through_class_sends_no_flushes(guard_in_lab: dict[str, Any]) -> None:
    checks = guard_in_lab["checks"]
    back, through = checks["flush_w1"], checks["flush_g4"]
    assert back["write_cache"] == "write back" and back["flushes"] > 100  # one per write
    assert through["write_cache"] == "write through" and through["flushes"] == 0
    assert checks["lv_write_cache"] == "write through"
    # With no flushes to wait for, fsync per write runs as fast as the same writes without
    # fsync, measured just before and after (at QD1 the emulated guest's CPU, not the
    # class's 500 cap, may set that pace on a busy host: 334 op/s at load 9.4 beside a
    # second VM, 2026-11-28), and never above the cap.
    paired = checks["paired_g4"]
    plain = (paired["before"] + paired["after"]) / 2
    # The first bound is the cap, from above: it needs no reference. The second is paired.
    within("lab write-through fsync per write (op/s)", through["iops"], high=1.05 * 500,
           reference=str(through))
    within("lab write-through: fsync per write over no fsync", paired["fsync"] / plain,
           low=0.8, high=1.2, reference=str(paired))


@pytest.mark.lab
@pytest.mark.slow
def test_kill9_of_volbench_then_cleanup_leaves_nothing(workdir: Path) -> None:
    need_lab()
    work, out = workdir / "lab", workdir / "out"
    vb = proc.start(
        [
            sys.executable,
            "-m",
            "volbench.cli.main",
            "lab",
            "exec",
            "--timeout",
            "600",
            "--workdir",
            str(work),
            "--outdir",
            str(out),
            "--",
            "sleep",
            "600",
        ],
        log=workdir / "volbench.log",
    )
    deadline = time.monotonic() + 120
    while not qemu_pids(str(work)) and time.monotonic() < deadline:
        assert vb.alive(), vb.output()
        time.sleep(0.2)
    assert qemu_pids(str(work)), vb.output()
    images = sorted(work.glob("vm-*/*.raw"))
    assert [p.name for p in images] == ["d1.raw", "d2.raw"]
    os.kill(vb.pid, signal.SIGKILL)
    vb.stop()
    time.sleep(1)
    assert qemu_pids(str(work)), "QEMU outlived volbench: this is what cleanup is for"
    removed, errors = kinds.cleanup()
    assert errors == []
    assert any(line.startswith("process") for line in removed)
    deadline = time.monotonic() + 30
    while qemu_pids(str(work)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert qemu_pids(str(work)) == []
    assert not any(p.exists() for p in images) and list(work.iterdir()) == []


@pytest.mark.lab
@pytest.mark.slow
def test_sigterm_of_lab_run_keeps_the_finished_runs(workdir: Path, tmp_path: Path) -> None:
    """SIGTERM on the host: the guest's volbench stops cleanly, its database comes back."""
    need_lab()
    exp = tmp_path / "exp.yaml"
    exp.write_text("""
name: stopped
lab: {disks: [{name: d1, size: 512M}], modules: []}
targets: [{name: one, type: disk, device: /dev/disk/by-id/virtio-d1, fs: none}]
workloads: [{name: r, tool: fio, rw: randread, bs: 4k, iodepth: 8, size: 64M, runtime: 4s}]
repeat: 5
""")
    db, work = tmp_path / "r.db", workdir / "lab"
    vb = proc.start(
        [
            sys.executable,
            "-m",
            "volbench.cli.main",
            "lab",
            "run",
            str(exp),
            "--db",
            str(db),
            "--workdir",
            str(work),
        ],
        log=tmp_path / "out.log",
    )
    deadline = time.monotonic() + 400
    while "1/5 one" not in vb.output() and time.monotonic() < deadline:
        assert vb.alive(), vb.output()
        time.sleep(0.5)
    os.kill(vb.pid, signal.SIGTERM)
    code = vb.popen.wait(timeout=120)
    vb.stop()
    assert code == 130, vb.output()
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        statuses = [str(r.status) for r in store.runs([row.id])]
    assert row.status == "interrupted" and statuses.count("ok") >= 1, (row.status, statuses)
    assert len(statuses) < 5
    assert qemu_pids(str(work)) == [] and list(work.iterdir()) == []


@pytest.mark.lab
def test_boot_timeout_is_reported_and_stops_the_vm(workdir: Path) -> None:
    need_lab()
    spec = LabSpec(disks=(LabDisk("t1", 64 * MiB),), modules=())
    started = time.monotonic()
    with pytest.raises(LabBootError) as info:
        run_in_vm(spec, ["true"], workdir / "out", boot_timeout=3, workdir=workdir / "lab")
    text = str(info.value)
    assert "did not boot within 3 s" in text and "boot_timeout" in text
    assert "console" in text  # the tail (or that it stayed empty) is part of the message
    assert time.monotonic() - started < 30
    assert qemu_pids(str(workdir / "lab")) == []
    assert list((workdir / "lab").iterdir()) == []
    assert (
        not list((workdir / "state").glob("journals/*")) if (workdir / "state").exists() else True
    )


@pytest.mark.lab
def test_boot_failure_is_reported_with_the_console(workdir: Path) -> None:
    need(
        tools.find("qemu-system-x86_64") is not None and find_vng() is not None,
        "the lab tools are not installed",
    )
    need(tools.find("busybox") is not None, "busybox is not installed")
    broken = workdir / "kernel" / "boot" / "vmlinuz-0.0.0-broken"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a kernel")
    kernel = lab_kernel.Kernel("broken", workdir / "kernel", broken)
    with pytest.raises(LabBootError) as info:
        run_in_vm(
            LabSpec(),
            ["true"],
            workdir / "out",
            kernel=kernel,
            workdir=workdir / "lab",
            boot_timeout=120,
        )
    text = str(info.value)
    assert "before the guest ran the command" in text and "console, last lines" in text
    assert list((workdir / "lab").iterdir()) == []
