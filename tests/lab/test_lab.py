"""The lab VM: its spec, QEMU options and guest script (fast), then a few real boots.

Boots cost ~20 s plus emulation, so each slow test shares one boot among many checks:
- `volbench lab run` of a two-disk, two-class experiment (CLI end to end, database back,
  IOPS within ±3 % of each class's cap);
- one guest script with the guard's refusals that need device-mapper and md, and the
  guest's cache drop and blkio throttle;
- kill -9 of the host volbench mid-run, then `volbench cleanup`;
- a boot timeout and a boot failure, reported with the console tail.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import DATA, need, need_lab
from volbench.config.fields import Reader
from volbench.config.lab import DEFAULT_CLASSES, WRITE_BACK, DiskClass, parse
from volbench.core.errors import ExperimentError
from volbench.engine import kinds
from volbench.engine.experiment import parse_document, parse_text
from volbench.lab import LabBootError, LabDisk, LabSpec, qemu_options, run_in_vm
from volbench.lab import kernel as lab_kernel
from volbench.lab.errors import KernelUnavailable, console_tail
from volbench.lab.guest import guest_cwd, script
from volbench.lab.labrun import lab_of
from volbench.lab.vm import find_vng
from volbench.report.table import environment_rows, lab_disk_text
from volbench.store.db import Store
from volbench.system import proc
from volbench.system.host import tools

MiB = 1024**2


# -- the spec, the QEMU options, the guest script (no boot) ------------------------------------


def lab(doc: dict[str, Any]) -> tuple[LabSpec, list[str]]:
    problems: list[Any] = []
    spec = parse(Reader(doc, "lab", problems))
    return spec, [str(p) for p in problems]


def test_lab_section_disks_and_classes() -> None:
    spec, problems = lab(
        {
            "disks": [
                {"name": "d1", "size": "2G"},
                {"name": "f", "count": 3, "class": "fast"},
                {"name": "s", "class": "slow"},
            ],
            "classes": {"slow": {"read_iops": 100, "write_iops": 50, "read_bps": "10M"}},
            "memory": "1G",
            "cpus": 1,
        }
    )
    assert problems == []
    assert [(d.name, d.disk_class) for d in spec.disks] == [
        ("d1", "standard"),
        ("f1", "fast"),
        ("f2", "fast"),
        ("f3", "fast"),
        ("s", "slow"),
    ]
    assert spec.disks[0].size == 2 * 1024**3 and spec.disks[1].size == 1024**3
    assert spec.disks[0].by_id == "/dev/disk/by-id/virtio-d1"
    assert spec.classes["fast"] == DEFAULT_CLASSES["fast"]
    assert spec.classes["slow"].caps() == {"read_iops": 100, "write_iops": 50, "read_bps": 10 * MiB}
    assert spec.memory == 1024**3 and spec.cpus == 1 and spec.accel == "tcg"


def test_lab_section_problems() -> None:
    _, problems = lab(
        {
            "disks": [
                {"name": "a-name-longer-than-20", "size": "1M"},
                {"name": "x", "class": "gold"},
                {"name": "x"},
                {"name": "bad name"},
            ],
            "classes": {"silly": {"iops": 9000, "read_iops": 10}},
            "memory": "64M",
        }
    )
    text = "\n".join(problems)
    assert "longer than 20 characters" in text
    assert "lab.disks[0].size: must be at least 16M" in text
    assert "unknown class 'gold'" in text
    assert "disk 'x' is defined twice" in text
    assert "'bad name' may only use letters" in text
    assert "lab.classes.silly.iops: QEMU takes either iops or read_iops / write_iops" in text
    assert "9000 is more than the emulated CPU can drive" in text
    assert "lab.memory: must be at least 512M" in text
    _, problems = lab({"accel": "xen"})
    assert problems == ["lab.accel: 'xen' is not one of: tcg, kvm"]
    _, problems = lab({"classes": {"fast": {"iops": 9000}}, "accel": "kvm"})
    assert problems == []  # with KVM the CPU is not the limit


def test_qemu_options_throttle_each_disk_by_its_class(tmp_path: Path) -> None:
    spec, _ = lab({"disks": [{"name": "d1"}, {"name": "d2", "class": "fast"}]})
    opts = qemu_options(spec, [tmp_path / "d1.raw", tmp_path / "d2.raw"])
    assert opts[:2] == ["-accel", "tcg,tb-size=256"]
    drives = [opts[i + 1] for i, o in enumerate(opts) if o == "-drive"]
    assert drives[0] == (
        f"file={tmp_path}/d1.raw,if=none,id=labdisk0,format=raw,cache.direct=on,"
        "cache.no-flush=on,aio=threads,throttling.iops-total=500,throttling.bps-total=52428800"
    )
    assert "throttling.iops-total=2000" in drives[1]
    devices = [opts[i + 1] for i, o in enumerate(opts) if o == "-device"]
    assert devices[1] == (
        "virtio-blk-pci,drive=labdisk0,serial=d1,bus=labbr0,addr=0x1,write-cache=off,config-wce=off"
    )
    many, _ = lab({"disks": [{"name": "d", "count": 40}]})
    opts = qemu_options(many, [tmp_path / f"{d.name}.raw" for d in many.disks])
    assert sum(o.startswith("pci-bridge") for o in opts) == 2  # 31 disks per bridge
    assert "serial=d40,bus=labbr1,addr=0x9" in opts[-1]


def test_write_cache_of_a_class(tmp_path: Path) -> None:
    spec, problems = lab(
        {
            "disks": [{"name": "wb", "class": "flushing"}, {"name": "wt"}],
            "classes": {"flushing": {"iops": 500, "write_cache": "write-back"}},
        }
    )
    assert problems == []
    assert spec.classes["standard"].write_cache == "write-through"  # the default
    opts = qemu_options(spec, [tmp_path / "wb.raw", tmp_path / "wt.raw"])
    drives = [opts[i + 1] for i, o in enumerate(opts) if o == "-drive"]
    devices = [opts[i + 1] for i, o in enumerate(opts) if o == "-device"][1:]  # after the bridge
    # write-back: flushes reach the image (cache=none is direct + flush)
    assert ",cache=none," in drives[0] and "write-cache" not in devices[0]
    # write-through: still O_DIRECT, but QEMU's per-write flush never reaches the host, and
    # the guest is offered no write cache (config-wce=off, or QEMU offers one anyway)
    assert ",cache.direct=on,cache.no-flush=on,aio=threads,throttling.iops-total=500," in drives[1]
    assert "cache=none" not in drives[1]
    assert devices[1].endswith(",write-cache=off,config-wce=off")
    described = {d["name"]: d for d in spec.describe()["disks"]}
    assert described["wt"]["write_cache"] == "write-through"
    assert described["wb"]["write_cache"] == "write-back"
    assert described["wt"]["caps"] == {"iops": 500, "bps": 50 * MiB}
    _, problems = lab({"classes": {"cloud": {"write_cache": "writethrough"}}})
    assert problems == [
        "lab.classes.cloud.write_cache: 'writethrough' is not one of: write-back, "
        "write-through (did you mean 'write-through'?)"
    ]


def test_bursting_class_becomes_qemu_bucket_options(tmp_path: Path) -> None:
    spec, problems = lab(
        {
            "disks": [{"name": "g", "class": "gp2-like"}, {"name": "w", "class": "rw"}],
            "classes": {
                "gp2-like": {"iops": 500, "burst_iops": 2500, "burst_seconds": 20},
                "rw": {"read_bps": "20M", "write_bps": "10M", "burst_read_bps": "60M",
                       "burst_write_bps": "30M", "burst_seconds": 10},
            },
        }
    )
    assert problems == []
    opts = qemu_options(spec, [tmp_path / "g.raw", tmp_path / "w.raw"])
    drives = [opts[i + 1] for i, o in enumerate(opts) if o == "-drive"]
    assert drives[0].endswith(
        "throttling.iops-total=500,throttling.iops-total-max=2500,"
        "throttling.iops-total-max-length=20"
    )
    assert (
        "throttling.bps-read-max=62914560,throttling.bps-read-max-length=10,"
        "throttling.bps-write-max=31457280,throttling.bps-write-max-length=10"
    ) in drives[1]
    described = {d["name"]: d for d in spec.describe()["disks"]}
    assert described["g"]["caps"] == {"iops": 500, "burst_iops": 2500, "burst_seconds": 20}
    assert described["w"]["caps"]["burst_read_bps"] == 60 * MiB
    assert lab_disk_text(described["g"]) == (
        "gp2-like: iops 500, burst_iops 2500, burst_seconds 20 s, write-through; 1 GiB"
    )
    assert "flat" not in spec.classes and spec.classes["standard"].caps() == {
        "iops": 500, "bps": 50 * MiB,
    }


def test_bursting_class_problems() -> None:
    _, problems = lab(
        {
            "classes": {
                "low": {"iops": 500, "burst_iops": 400, "burst_seconds": 20},
                "nobase": {"bps": "50M", "burst_iops": 2000, "burst_seconds": 20},
                "nolength": {"iops": 500, "burst_iops": 2000},
                "zero": {"iops": 500, "burst_iops": 2000, "burst_seconds": 0},
                "lonely": {"iops": 500, "burst_seconds": 20},
                "cpu": {"iops": 500, "burst_iops": 8000, "burst_seconds": 20},
            }
        }
    )
    assert problems == [
        "lab.classes.low.burst_iops: 400 must be above iops, 500 (raise burst_iops, or remove "
        "it for a flat disk)",
        "lab.classes.nobase.burst_iops: a burst rises above a cap, and iops is not set (set "
        "iops, the sustained rate, or remove burst_iops)",
        "lab.classes.nolength.burst_iops: a burst needs its length (add burst_seconds: how "
        "long a full bucket lasts at the burst rate)",
        "lab.classes.zero.burst_seconds: must be at least 1, got 0",
        "lab.classes.lonely.burst_seconds: a burst length without a burst rate (add "
        "burst_iops or burst_bps, or remove burst_seconds)",
        "lab.classes.cpu.burst_iops: 8000 is more than the emulated CPU can drive (it tops "
        "out near 10k IOPS, so the CPU and not the cap would set the speed) (keep caps at or "
        "below 5000, or use accel: kvm where KVM works)",
    ]


def test_report_shows_the_lab_disks() -> None:
    spec, _ = lab(
        {
            "disks": [
                {"name": "d1", "size": "2G"},
                {"name": "c", "class": "flushing"},
                {"name": "lv", "count": 25, "size": "100M"},
            ],
            "classes": {"flushing": {"write_cache": "write-back"}},
        }
    )
    described = spec.describe()
    described["disks"][0]["caps"] = dict(sorted(described["disks"][0]["caps"].items()))  # as stored
    rows = dict(environment_rows({"lab": described}))
    assert rows["lab disks lv1 … lv25 (25)"] == (
        "standard: iops 500, bps 50 MiB/s, write-through; 100 MiB"
    )
    assert rows["lab disk d1"] == "standard: iops 500, bps 50 MiB/s, write-through; 2 GiB"
    assert rows["lab disk c"] == "flushing: uncapped, write-back; 1 GiB"
    # recorded before classes had a write cache, when every lab disk was write-back
    old = {"disks": [{"name": n, "class": "standard", "caps": {"iops": 500}, "size": 2**30}
                     for n in ("d1", "d2")]}
    old_rows = dict(environment_rows({"lab": old}))
    assert old_rows["lab disks d1, d2"] == "standard: iops 500, write-back; 1 GiB"


def test_guest_script_prepares_and_quotes(tmp_path: Path) -> None:
    text = script(
        tmp_path / ".lab",
        ["fio", "--name=a b", "$HOME"],
        cwd=Path("/work"),
        modules=["dm-mod", "raid0"],
        env={"X": "1 2"},
        bindir=Path("/venv/bin"),
    )
    assert "modprobe -a dm-mod raid0" in text
    assert "[ -d /sys/module/dm_mod ] || echo dm-mod" in text
    assert "mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio" in text
    assert "export LVM_SUPPRESS_FD_WARNINGS=1" in text and "export X='1 2'" in text
    assert "fio '--name=a b' '$HOME'\necho $? > \"$lab/exitcode\"" in text
    assert guest_cwd(Path("/var/tmp/x"), tmp_path) == tmp_path  # guest tmpfs there
    assert guest_cwd(Path("/work"), tmp_path) == Path("/work")


def test_kernel_package_from_apt_cache_output() -> None:
    base = DATA / "apt-cache" / "2.6.1"
    text = (base / "depends-linux-image-amd64.stdout").read_text()
    assert lab_kernel.parse_depends(text) == "linux-image-6.1.0-56-amd64"
    assert lab_kernel.parse_depends((base / "depends-unknown.stdout").read_text()) is None


def test_kernel_cache_must_be_visible_in_the_guest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lab_kernel.CACHE_ENV, "/var/cache/volbench-test-lab")
    monkeypatch.delenv(lab_kernel.KERNEL_ENV, raising=False)
    with pytest.raises(KernelUnavailable, match="the guest does not see"):
        lab_kernel.ensure_kernel()
    monkeypatch.setenv(lab_kernel.KERNEL_ENV, "/nonexistent/vmlinuz")
    with pytest.raises(KernelUnavailable, match="is not a file"):
        lab_kernel.ensure_kernel()


def test_lab_run_needs_a_lab_and_its_disks() -> None:
    doc: dict[str, Any] = {
        "workloads": [{"tool": "fio", "name": "f"}],
        "targets": [{"name": "a", "type": "disk", "device": "/dev/disk/by-id/virtio-d9"}],
    }
    with pytest.raises(ExperimentError, match="has no lab: section"):
        lab_of(parse_document(doc), "x.yaml")
    doc["lab"] = {"disks": [{"name": "d1"}]}
    with pytest.raises(ExperimentError, match="virtio-d9 is not a lab disk"):
        lab_of(parse_document(doc), "x.yaml")
    doc["targets"][0]["device"] = "/dev/disk/by-id/virtio-d1"
    assert lab_of(parse_document(doc), "x.yaml").disks[0].name == "d1"


def test_console_tail() -> None:
    assert "(the console stayed empty)" in console_tail("")
    tail = console_tail("\r\n".join(f"line {i}" for i in range(100)), lines=3)
    assert tail.splitlines()[-3:] == ["    line 97", "    line 98", "    line 99"]


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


EXPERIMENT = """
name: lab-classes
lab:
  disks:
    - {name: d1, size: 1G, class: standard}
    - {name: d2, size: 1G, class: fast}
targets:
  - {name: standard, type: disk, device: /dev/disk/by-id/virtio-d1, fs: none}
  - {name: fast, type: disk, device: /dev/disk/by-id/virtio-d2, fs: none}
workloads:
  - {name: rand4k, tool: fio, rw: randread, bs: 4k, iodepth: 32, size: 256M, runtime: 6s,
     options: {ramp_time: "2"}}
repeat: 1
"""


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
            "--quiet",
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
    assert "2 ok" in console  # the guest's own summary line
    with Store(lab_run["db"], create=False) as store:
        (row,) = store.experiments()
        assert row.name == "lab-classes" and row.status == "done"
        targets = {t.name: t for t in store.targets(row.id)}
        runs = {r.target: r for r in store.runs([row.id])}
    # the lab's disks are recorded with the caps of their (here default) classes
    recorded = {d["name"]: d for d in row.environment["lab"]["disks"]}
    assert recorded["d1"]["caps"] == {"iops": 500, "bps": 50 * MiB}
    assert recorded["d2"]["caps"] == {"iops": 2000, "bps": 200 * MiB}
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
def test_lab_disks_run_at_their_class_cap(lab_run: dict[str, Any]) -> None:
    assert lab_run["done"].returncode == 0, lab_run["done"].stderr
    with Store(lab_run["db"], create=False) as store:
        runs = {r.target: r for r in store.runs([store.experiments()[0].id])}
    for name, cap in (("standard", 500), ("fast", 2000)):
        (iops,) = [
            m.value for m in runs[name].metrics if m.name == "iops" and m.tags.get("op") == "read"
        ]
        assert iops is not None and abs(iops - cap) <= 0.03 * cap, (name, iops, cap)


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
for d in ("g4", "w1"):
    before = int(sysfs(disk(d), "stat").split()[15])  # flush requests completed
    fio = proc.run(["fio", "--name=f", "--filename=" + disk(d), "--direct=1", "--rw=randwrite",
                    "--bs=4k", "--ioengine=psync", "--fsync=1", "--runtime=4", "--ramp_time=1",
                    "--time_based", "--output-format=json"], timeout=120)
    results["flush_" + d] = {
        "write_cache": sysfs(disk(d), "queue/write_cache").strip(),
        "flushes": int(sysfs(disk(d), "stat").split()[15]) - before,
        "iops": json.loads(fio.stdout)["jobs"][0]["write"]["iops"],
    }
# an LV on write-through disks is write-through too: device-mapper has no flush to fan out
run("pvcreate", "-q", disk("g4"))
run("vgcreate", "-q", "vbw", disk("g4"))
run("lvcreate", "-q", "-y", "-L", "8M", "-n", "lv0", "vbw")
results["lv_write_cache"] = sysfs("/dev/vbw/lv0", "queue/write_cache").strip()
run("vgchange", "-q", "-an", "vbw")
run("vgremove", "-q", "-f", "vbw")
(out / "guard.json").write_text(json.dumps(results))
"""


@pytest.fixture(scope="module")
def guard_in_lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One boot with five small disks: guard refusals with dm and md, cache drop, blkio,
    and what a write-back class (w1) changes against the default write-through one."""
    need_lab()
    out = tmp_path_factory.mktemp("guardlab")
    (out / "checks.py").write_text(GUARD_SCRIPT)
    work = Path("/var/tmp/volbench-tests") / f"labg-{os.getpid()}"
    spec = LabSpec(
        disks=(*(LabDisk(f"g{i}", 64 * MiB) for i in range(1, 5)), LabDisk("w1", 64 * MiB, "wb")),
        classes={**DEFAULT_CLASSES, "wb": DiskClass("wb", iops=500, write_cache=WRITE_BACK)},
    )
    result = run_in_vm(
        spec, [sys.executable, str(out / "checks.py"), str(out)], out, timeout=600, workdir=work
    )
    assert result.returncode == 0, result.console[-3000:]
    assert list(work.iterdir()) == []
    work.rmdir()
    return {"result": result, "checks": json.loads((out / "guard.json").read_text())}


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
    assert abs(checks["blkio_iops"] - 300) <= 0.05 * 300, checks["blkio_iops"]
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
    # with no flushes to wait for, fsync-per-write runs at the class's cap
    assert abs(through["iops"] - 500) <= 0.05 * 500, through


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


def test_plain_run_accepts_a_lab_section() -> None:
    exp = parse_text(EXPERIMENT)
    assert exp.lab is not None and [d.name for d in exp.lab.disks] == ["d1", "d2"]
    assert exp.document["lab"]["disks"][0]["class"] == "standard"  # stored with the results
