"""The lab VM without booting it: the lab: section, QEMU options, guest script, kernel
package names, console tail (moved from tests/lab/test_lab.py, which keeps the boots)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from support import DATA, folder_problem
from support import LAB_EXPERIMENT as EXPERIMENT
from volbench.config.fields import Reader
from volbench.config.lab import DEFAULT_CLASSES, parse
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document, parse_text
from volbench.lab import LabSpec, qemu_options
from volbench.lab import kernel as lab_kernel
from volbench.lab.errors import KernelUnavailable, console_tail
from volbench.lab.guest import cached_dirs, compile_package, guest_cwd, script
from volbench.lab.labrun import lab_of
from volbench.report.table import environment_rows, lab_disk_text

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
        "virtio-blk-pci,drive=labdisk0,id=labdev0,serial=d1,bus=labbr0,addr=0x1,write-cache=off,config-wce=off"
    )
    many, _ = lab({"disks": [{"name": "d", "count": 40}]})
    opts = qemu_options(many, [tmp_path / f"{d.name}.raw" for d in many.disks])
    assert sum(o.startswith("pci-bridge") for o in opts) == 2  # 31 disks per bridge
    assert "serial=d40,bus=labbr1,addr=0x9" in [o for o in opts if "virtio-blk" in o][-1]
    # and the host's root once more, for the guest's cached view (lab/guest.py)
    assert opts[-4:] == ["-fsdev", "local,id=vbro,path=/,security_model=none,readonly=on,"
                         "multidevs=remap", "-device",
                         "virtio-9p-pci,fsdev=vbro,mount_tag=volbench-ro"]


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
        "write-through, lying (did you mean 'write-through'?)"
    ]


def test_lying_class_sees_write_back_and_its_flushes_are_free(tmp_path: Path) -> None:
    spec, problems = lab({"disks": [{"name": "l", "class": "liar"}],
                          "classes": {"liar": {"iops": 500, "write_cache": "lying",
                                               "writeback": "2s"}}})
    assert problems == []
    opts = qemu_options(spec, [tmp_path / "l.raw"])
    drive = next(opts[i + 1] for i, o in enumerate(opts) if o == "-drive")
    device = [opts[i + 1] for i, o in enumerate(opts) if o == "-device"][1]
    # The guest is offered a write cache (it sends flushes); QEMU drops them.
    assert ",cache.direct=on,cache.no-flush=on," in drive
    assert device.endswith(",write-cache=on")
    described = spec.describe()["disks"][0]
    assert (described["write_cache"], described["writeback_s"]) == ("lying", 2.0)
    _, problems = lab({"classes": {"wb": {"write_cache": "write-back", "writeback": "2s"}}})
    assert problems == ["lab.classes.wb.writeback: only a lying disk has a write-back period "
                        "of its own (set write_cache: lying, or remove writeback)"]
    _, problems = lab({"classes": {"l": {"write_cache": "lying", "writeback": "2h"}}})
    assert problems == ["lab.classes.l.writeback: 7200 s is not between 0.1 s and 1 h "
                        "(e.g. writeback: 5s)"]


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
    # The cached view of the host's files is mounted before anything runs, each folder bound
    # over its uncached twin; what could not be is written down, and the run goes on.
    assert text.index("cache=loose") < text.index("udevadm settle") < text.index("fio '--name")
    assert 'mount --bind "/run/volbench-ro$d" "$d" || echo "$d" >> "$lab/uncached"' in text
    assert " /usr/bin /usr/lib/x86_64-linux-gnu /usr/sbin" in text


def test_the_guest_reads_pythons_tools_and_volbench_through_the_cached_view() -> None:
    """This Python, its virtualenv, the checkout (tests/ too), tools and libraries; never
    /usr or / as a whole (the guest's /usr is an overlay it may write), no folder twice."""
    checkout = Path("/work/v/src/volbench")
    assert cached_dirs(checkout, "/work/v/.venv", "/opt/py", "/opt/py/lib/python3.11") == [
        "/opt/py", "/usr/bin", "/usr/lib/x86_64-linux-gnu", "/usr/sbin", "/work/v"]
    installed = Path("/usr/lib/python3/dist-packages/volbench")
    assert cached_dirs(installed, "/usr", "/usr", "/usr/lib/python3.11") == [
        "/usr/bin", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages",
        "/usr/lib/x86_64-linux-gnu", "/usr/sbin"]
    venv = Path("/opt/v/lib/python3.11/site-packages/volbench")
    assert cached_dirs(venv, "/opt/v", "/usr", "/usr/lib/python3.11") == [
        "/opt/v", "/usr/bin", "/usr/lib/python3.11", "/usr/lib/x86_64-linux-gnu", "/usr/sbin"]


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


def test_plain_run_accepts_a_lab_section() -> None:
    exp = parse_text(EXPERIMENT)
    assert exp.lab is not None and [d.name for d in exp.lab.disks] == ["d1", "d2", "d3"]
    assert exp.document["lab"]["disks"][0]["class"] == "standard"  # stored with the results


def test_folders_are_markers() -> None:
    # tests/conftest.py refuses a collection where these rules are broken.
    assert folder_problem("unit", set()) is None and folder_problem("system", {"root"}) is None
    assert folder_problem("lab", {"lab", "slow"}) is None
    assert "tests/system or lab" in str(folder_problem("unit", {"root"}))
    assert "mark it lab" in str(folder_problem("lab", {"slow"}))
    assert "belongs in tests/lab" in str(folder_problem("system", {"lab"}))


def test_an_absurd_disk_count_is_refused_without_making_its_disks() -> None:
    # A count out of range once made its list of names before the refusal: count 10**400
    # (hypothesis, test_properties) took 24 GiB and the OOM killer ended the test run.
    spec, problems = lab({"disks": [{"name": "d", "count": 10**400}]})
    assert any("count: must be at most" in p for p in problems), problems
    assert len(spec.disks) <= 64
    _, problems = lab({"disks": [{"name": "d", "count": -(10**400)}]})
    assert any("count: must be at least 1" in p for p in problems), problems


def test_the_package_s_byte_code_is_written_before_a_boot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guest reads the host's files read-only: byte code missing there would be
    compiled again by every Python in the guest (lab/guest.py compile_package)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # a host that writes none itself
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (package / "sub" / "mod.py").write_text("Y = 2\n")
    assert compile_package(package)
    written = sorted(p.relative_to(package).parts[-1] for p in package.rglob("*.pyc"))
    assert [w.split(".")[0] for w in written] == ["__init__", "mod"]
    stamps = {p: p.stat().st_mtime_ns for p in package.rglob("*.pyc")}
    assert compile_package(package)  # again: nothing stale, nothing rewritten
    assert stamps == {p: p.stat().st_mtime_ns for p in package.rglob("*.pyc")}
    (package / "ro").mkdir()
    (package / "ro" / "m.py").write_text("Z = 3\n")
    (package / "ro").chmod(0o555)
    try:
        if os.geteuid() != 0:  # root writes anyway
            assert not compile_package(package)
    finally:
        (package / "ro").chmod(0o755)
