"""What tests share: requirements (need, tool, need_lab), captured outputs (DATA),
leftover checks, and small result databases built through the real store.

One module, so test files never import each other (or conftest).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from volbench import report
from volbench.core.model import Histogram, Metric, Parsed, RunResult, Series, Status
from volbench.lab import kernel as lab_kernel
from volbench.lab.errors import KernelUnavailable
from volbench.lab.vm import find_vng
from volbench.report.options import ReportOptions
from volbench.store.db import Store
from volbench.system import proc
from volbench.system.block import devices, mounts
from volbench.system.block.cgroups import BLKIO
from volbench.system.host import tools

STRICT = os.environ.get("VOLBENCH_TESTS_STRICT") == "1"
TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
ROOT = TESTS.parent  # the repository


def need(condition: bool, why: str) -> None:
    """Skip (or, in strict mode, fail) when a requirement is missing."""
    if condition:
        return
    if STRICT:
        pytest.fail(f"requirement missing in strict mode: {why}")
    pytest.skip(why)


def folder_problem(folder: str, markers: set[str]) -> str | None:
    """Folders are markers: tests/unit needs neither root nor the VM (and starts no
    process: tests/unit/conftest.py), every test in tests/lab boots the VM and is marked
    `lab`, and `lab` tests live nowhere else. tests/system starts real tools; `root` says
    which of them need root."""
    if folder == "unit" and markers & {"root", "lab"}:
        return "a unit test needs neither root nor the lab VM: move it to tests/system or lab"
    if folder == "lab" and "lab" not in markers:
        return "every test in tests/lab boots the VM: mark it lab, or move it to tests/unit"
    if folder != "lab" and "lab" in markers:
        return "a test that boots the lab VM belongs in tests/lab"
    return None


def leftovers(path: Path) -> list[str]:
    """Loop devices backed by files under `path`, mounts under it, our cgroups."""
    found: list[str] = []
    prefix = str(path)
    out = devices.proc.run(["losetup", "--json", "--list"], timeout=30, check=False).stdout
    if out.strip():
        for dev in json.loads(out).get("loopdevices", []):
            if str(dev.get("back-file") or "").startswith(prefix):
                found.append(f"loop {dev['name']} -> {dev['back-file']}")
    found += [f"mount {m}" for m in mounts.mounted_under(path)]
    if BLKIO.exists():
        found += [f"cgroup {p}" for p in BLKIO.glob(f"volbench-{os.getpid()}-*")]
    return found


def tool(name: str) -> str:
    """Path of a tool the test needs (skip or fail in strict mode when missing)."""
    path = tools.find(name)
    need(path is not None, f"{name} is not installed")
    assert path is not None
    return path


def need_lab() -> None:
    need(tools.find("qemu-system-x86_64") is not None, "qemu-system-x86 is not installed")
    need(find_vng() is not None, "virtme-ng is not installed (pip install 'volbench[lab]')")
    busybox = tools.find("busybox")
    static = (
        busybox is not None
        and "statically linked" in proc.run(["file", "-L", busybox], timeout=30, check=False).stdout
    )
    need(static, "busybox-static is not installed")
    try:
        lab_kernel.ensure_kernel()
    except KernelUnavailable as exc:
        if STRICT:
            raise
        pytest.skip(str(exc))


# -- small result databases ------------------------------------------------------------

UNITS = {
    "iops": "op/s",
    "bw": "B/s",
    "lat_mean": "s",
    "io_bytes": "B",
    "clat_p99": "s",
    "tps": "tx/s",
    "cpu_usr": "%",
}
ENV = {
    "checked": {
        "kernel": "6.1.0",
        "cpu": "Test CPU",
        "memory_bytes": 8 * 1024**3,
        "tools": {"fio": "fio-3.33"},
    },
    "hostname": "h1",
}


# A two-disk, two-class lab experiment (tests/lab/test_lab.py boots it; unit tests parse it).
LAB_EXPERIMENT = """
name: lab-classes
lab:
  disks:
    - {name: d1, size: 1G, class: standard}
    - {name: d2, size: 1G, class: fast}
    - {name: d3, size: 1G, class: free}
  classes:
    free: {}      # no cap: what the guest itself delivers at that moment (tests/lab/test_lab.py)
targets:
  - {name: standard, type: disk, device: /dev/disk/by-id/virtio-d1, fs: none}
  - {name: fast, type: disk, device: /dev/disk/by-id/virtio-d2, fs: none}
  - {name: free, type: disk, device: /dev/disk/by-id/virtio-d3, fs: none}
workloads:
  - {name: rand4k, tool: fio, rw: randread, bs: 4k, iodepth: 32, size: 256M, runtime: 6s,
     options: {ramp_time: "2"}}
repeat: 1
"""


def lab_run(tmp_path: Path, experiment: str, tag: str, timeout: float = 600) -> Path:
    """`volbench lab run` of `experiment` (YAML text) through the CLI, as a user runs it,
    with a state directory of its own; returns the results database. The work folder
    must be empty afterwards (run_in_vm removes the images) and is removed."""
    need_lab()
    (tmp_path / "exp.yaml").write_text(experiment)
    db = tmp_path / "results.db"
    work = Path("/var/tmp/volbench-tests") / f"lab-{tag}-{os.getpid()}"
    done = proc.run(
        [sys.executable, "-m", "volbench.cli.main", "lab", "run", str(tmp_path / "exp.yaml"),
         "--db", str(db), "--quiet", "--workdir", str(work)],
        timeout=timeout, env={"VOLBENCH_STATE_DIR": str(tmp_path / "state")}, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(work.iterdir()) == []
    work.rmdir()
    return db


def directory_fio_file(tmp_path: Path, options: str = "") -> Path:
    """An experiment file: one 1 s buffered fio run of 1 MiB on a directory target made in
    `tmp_path` (`options` is a YAML flow mapping's body added to the workload)."""
    space = tmp_path / "space"
    space.mkdir()
    extra = f", options: {{{options}}}" if options else ""
    exp = tmp_path / "e.yaml"
    exp.write_text(f"name: f\nworkdir: {tmp_path / 'work'}\ntargets: [{{name: d, type: "
                   f"directory, path: {space}}}]\nworkloads: [{{name: w, tool: fio, size: 1M,"
                   f" runtime: 1s, direct: false{extra}}}]\nrepeat: 1\n")
    return exp


def make_run(
    target: str,
    values: Mapping[str, float],
    rep: int,
    *,
    started: float,
    workload: str = "w",
    params: Mapping[str, Any] | None = None,
    status: Status = Status.OK,
    annotations: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    parsed_extra: Parsed | None = None,
    error: str = "",
) -> RunResult:
    tags = {"op": "read"} if tags is None else dict(tags)
    metrics = tuple(
        Metric(name, value, UNITS.get(name, ""), tags) for name, value in values.items()
    )
    extra = parsed_extra or Parsed()
    return RunResult(
        target,
        workload,
        dict(params or {"bs": "4k", "rw": "randread"}),
        rep,
        status,
        started,
        started + 5.0,
        error=error,
        parsed=Parsed(metrics, extra.series, extra.histograms),
        annotations=dict(annotations or {}),
    )


def stored_run(target: str, rep: int, bins: tuple[tuple[float, int], ...], *,
               status: Status = Status.OK, warmup: bool = False, note: str = "",
               start: float = 100.0, outputs: Mapping[str, str] | None = None) -> RunResult:
    """A run with one of everything the store keeps (metrics with a note, a series, a
    histogram of `bins`, annotations), for the store's round-trip tests on both backends."""
    return RunResult(
        target, "w", {"rw": "randread", "bs": "4k"}, rep, status, start + rep, 101.5 + rep,
        warmup, argv=("fio", "--x"), exit_code=0,
        parsed=Parsed((Metric("iops", 1000.0 + rep, "op/s", {"op": "read"}),
                       Metric("io_bytes", 4096.0 * rep, "B", {"op": "read"}, note)),
                      (Series("iops", "op/s", ((1.0, 990.0), (2.0, 1010.0 + rep)),
                              {"op": "read"}),),
                      (Histogram("clat", "s", bins, {"op": "read"}),)),
        outputs=dict(outputs or {}), annotations={"device_io": {"read_bytes": 5}})


def make_db(
    path: Path,
    runs: Sequence[RunResult],
    *,
    document: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
    name: str = "demo",
    targets: Sequence[str] | None = None,
) -> Path:
    doc = dict(document or {"name": name})
    with Store(path) as store:
        exp = store.begin_experiment(name, f"hash-{name}", doc, dict(environment or ENV), None)
        for t in targets or list(dict.fromkeys(r.target for r in runs)):
            store.save_target(exp, t, "loopdisk", "built", {"recipe": [f"mkfs.xfs /dev/{t}"]})
        for r in runs:
            store.save_run(exp, r)
        store.set_status(exp, "done")
    return path


def load(path: Path, options: ReportOptions | None = None) -> report.Report:
    with Store(path, create=False) as store:
        rows = store.experiments()
        ids = [rows[-1].id]
        return report.build(
            [store.experiment(i) for i in ids],
            [t for i in ids for t in store.targets(i)],
            store.runs(ids, series=True, histograms=True),
            options,
        )
