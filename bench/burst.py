"""Lab bursting disk classes: what QEMU's burst settings give, and what volbench detects.

One boot, four fio runs with per-second IOPS/bandwidth logs (fio's own averaged logs, as
volbench runs fio), one after another:

1. `burst` class (500 IOPS, bursts to 2500 for 20 s of bucket): 60 s of random 4k reads
   at QD32 from a fresh (full) bucket;
2. `flat` class (500 IOPS): 60 s, the same job; meanwhile the bursting disk idles;
3. the bursting disk again for 30 s: the burst it earned back while idle;
4. `burstbw` class (20 MiB/s, bursts to 60 MiB/s for 10 s): sequential 1M reads at QD4,
   40 s.

For each run it prints QEMU's expected figures next to the measured ones (the levels from
the logs, the burst's end where the rate first falls to the sustained level) and what
volbench's change-point detector (volbench.stats.changepoint) finds in the same series.

    .venv/bin/python bench/burst.py [--keep DIR] [--from DIR]

`--keep DIR` keeps the logs; `--from DIR` analyses kept logs without booting.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from volbench.config.lab import DiskClass
from volbench.lab import LabDisk, LabSpec, ensure_kernel, run_in_vm
from volbench.stats.changepoint import regimes
from volbench.workloads.fio import LOG_PREFIX, parse_logs

MiB = 2**20
CLASSES = {
    "burst": DiskClass("burst", iops=500, bursts={"iops": 2500}, burst_seconds=20),
    "flat": DiskClass("flat", iops=500),
    "burstbw": DiskClass("burstbw", bps=20 * MiB, bursts={"bps": 60 * MiB}, burst_seconds=10),
}
RAND = "--rw=randread --bs=4k --iodepth=32"
SEQ = "--rw=read --bs=1M --iodepth=4"


@dataclass(frozen=True)
class Job:
    name: str
    disk: str
    args: str
    runtime: int
    kind: str  # the fio log that holds its rate: iops or bw


JOBS = (
    Job("burst-fresh", "b1", RAND, 60, "iops"),
    Job("flat", "f1", RAND, 60, "iops"),
    Job("burst-refilled", "b1", RAND, 30, "iops"),
    Job("burstbw-fresh", "w1", SEQ, 40, "bw"),
)
DISKS = {"b1": "burst", "f1": "flat", "w1": "burstbw"}


def guest_command(outdir: Path) -> list[str]:
    """Each job's start and end (guest clock) go into JOB.times, its logs into JOB_*.log."""
    lines = []
    for job in JOBS:
        prefix = shlex.quote(str(outdir / job.name))
        lines.append(
            f"date +%s.%N > {prefix}.times && "
            f"fio --name={job.name} --filename=/dev/disk/by-id/virtio-{job.disk} --direct=1 "
            f"--ioengine=libaio {job.args} --runtime={job.runtime} --time_based "
            f"--write_iops_log={prefix} --write_bw_log={prefix} --log_avg_msec=1000 "
            f"--output-format=json --output={prefix}.json && date +%s.%N >> {prefix}.times"
        )
    return ["sh", "-c", " && ".join(lines)]


def series(outdir: Path, job: Job) -> list[float]:
    logs = {
        f"{LOG_PREFIX}_{kind}.1.log": (outdir / f"{job.name}_{kind}.1.log").read_text()
        for kind in ("iops", "bw")
    }
    found = next(s for s in parse_logs(logs) if s.name == job.kind)
    return [v for _, v in found.points]


def expected(job: Job, idle: float | None) -> tuple[float, float, float]:
    """(burst level, burst seconds, sustained level) from QEMU's leaky bucket (docs/lab.md)."""
    cls = CLASSES[DISKS[job.disk]]
    key = "iops" if job.kind == "iops" else "bps"
    base, peak = float(cls.caps()[key]), float(cls.bursts[key])
    assert cls.burst_seconds is not None
    bucket = peak * cls.burst_seconds
    credit = bucket if idle is None else min(base * idle, bucket)
    return peak, credit / (peak - base), base


def measured_burst(values: list[float], base: float) -> tuple[float, float, float]:
    """Plain reading of a log: the burst ends at the first second within 10 % of the cap."""
    end = next((i for i, v in enumerate(values) if v < base * 1.1), len(values))
    burst = statistics.median(values[: max(end - 1, 1)])
    # The second the burst ends in is part burst, part sustained: count its share.
    if 0 < end < len(values):
        share = (values[end - 1] - base) / (burst - base) if burst > base else 0.0
        length = end - 1 + max(0.0, min(1.0, share))
    else:
        length = float(end)
    sustained = statistics.median(values[end + 1 :]) if end + 1 < len(values) else float("nan")
    return burst, length, sustained


def fmt(value: float, kind: str) -> str:
    return f"{value:,.0f} IOPS" if kind == "iops" else f"{value / MiB:.1f} MiB/s"


def report(outdir: Path) -> None:
    times = {j.name: [float(x) for x in (outdir / f"{j.name}.times").read_text().split()]
             for j in JOBS}
    print("| run | figure | QEMU's settings give | measured (log) | detected (changepoint) |")
    print("|---|---|---|---|---|")
    for job in JOBS:
        values = series(outdir, job)
        flat = DISKS[job.disk] == "flat"
        refilled = job.name == "burst-refilled"
        idle = times[job.name][0] - times["burst-fresh"][1] if refilled else None
        found = regimes(values)
        det = (fmt(found.burst_level, job.kind), f"{found.burst_seconds:.1f} s",
               fmt(found.sustained_level, job.kind)) if found.burst_seconds else (
               "none", "0 s", fmt(found.sustained_level, job.kind))
        if flat:
            print(f"| {job.name} | burst | none | - | {det[0]} |")
            print(f"| {job.name} | level | 500 IOPS | {fmt(statistics.median(values), job.kind)} "
                  f"| {det[2]} |")
            continue
        exp = expected(job, idle)
        meas = measured_burst(values, exp[2])
        note = f" (after {idle:.0f} s idle)" if idle is not None else ""
        print(f"| {job.name}{note} | burst level | {fmt(exp[0], job.kind)} "
              f"| {fmt(meas[0], job.kind)} | {det[0]} |")
        print(f"| {job.name} | burst length | {exp[1]:.1f} s | {meas[1]:.1f} s | {det[1]} |")
        print(f"| {job.name} | sustained | {fmt(exp[2], job.kind)} "
              f"| {fmt(meas[2], job.kind)} | {det[2]} |")
    print("\nper-second series:")
    for job in JOBS:
        scale = 1.0 if job.kind == "iops" else 1.0 / MiB
        print(f"{job.name}: " + " ".join(f"{v * scale:.0f}" for v in series(outdir, job)))


def boot(outdir: Path) -> None:
    spec = LabSpec(
        disks=tuple(LabDisk(name, 2**30, cls) for name, cls in DISKS.items()),
        classes=CLASSES,
    )
    t0 = time.monotonic()
    kernel = ensure_kernel()
    result = run_in_vm(spec, guest_command(outdir), outdir, timeout=900, kernel=kernel)
    if result.returncode != 0:
        sys.exit(f"fio failed in the guest\n{result.console[-3000:]}")
    print(f"one boot, {len(JOBS)} runs: {time.monotonic() - t0:.0f} s "
          f"(boot {result.boot_seconds or 0:.1f} s)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="keep the fio logs in this folder")
    parser.add_argument("--from", dest="source", type=Path, help="analyse kept logs, no boot")
    args = parser.parse_args()
    if args.source is not None:
        report(args.source)
        return
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volbench-burst-") as tmp:
        out = Path(tmp)
        boot(out)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for f in out.iterdir():
                if f.is_file():
                    shutil.copy2(f, args.keep / f.name)
        report(out)


if __name__ == "__main__":
    main()
