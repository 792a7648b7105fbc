"""Overhead of fio's latency logs: the same job with and without them, side by side.

volbench runs every fio job with per-second IOPS and bandwidth logs; the per-window
latency adds a per-second mean latency log (write_lat_log) and per-second latency
histograms (write_hist_log), see volbench/workloads/fiologs.py. This runs each job in
rotating order (IOPS/bandwidth logs only, as before; + the lat log; + the histogram log;
volbench's logs now), and prints the median IOPS of each as a ratio to before, CPU
seconds per million I/Os, and the bytes of log volbench's latency logs add per second
(raw and zlib-compressed, as stored).

Two jobs where fio's own bookkeeping is the bottleneck (the worst case for any logging):
`ioengine=null` (no I/O at all) and 4k buffered random reads from a cached file
(psync); and one where a disk sets the pace: direct 4k random reads at QD16 from this
machine's disk (a file under /var/tmp, laid out by the first run).

    .venv/bin/python bench/fiolog_overhead.py [--runtime 4] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import zlib
from pathlib import Path

from volbench.workloads.fiologs import LOG_OPTIONS

BASE_LOGS = ["--write_iops_log=fio", "--write_bw_log=fio", "--log_avg_msec=1000"]
VARIANTS = {
    "before": BASE_LOGS,
    "+lat log": [*BASE_LOGS, "--write_lat_log=fio"],
    "+hist log": [*BASE_LOGS, "--write_hist_log=fio", "--log_hist_msec=1000"],
    "volbench now": [f"--{k}={v}" for k, v in LOG_OPTIONS],
}
JOBS = {
    "null engine, 4k randread": ["--ioengine=null", "--rw=randread", "--bs=4k", "--size=1G"],
    "psync 4k randread, cached file": ["--ioengine=psync", "--rw=randread", "--bs=4k",
                                       "--size=64M", "--invalidate=0"],
    # A disk sets the pace: this machine's own (virtual) disk under /var/tmp.
    "libaio direct 4k randread QD16, host disk": ["--ioengine=libaio", "--direct=1",
                                                  "--rw=randread", "--bs=4k", "--iodepth=16",
                                                  "--size=256M"],
}


def run(workdir: Path, job: list[str], logs: list[str], runtime: int) -> tuple[float, float]:
    """(IOPS, CPU seconds per million I/Os) of one fio run in a clean directory."""
    for old in workdir.glob("fio_*.log"):
        old.unlink()
    out = workdir / "out.json"
    argv = ["fio", "--name=b", f"--filename={workdir / 'data'}", *job,
            f"--runtime={runtime}", "--time_based=1", "--output-format=json",
            f"--output={out}", *logs]
    subprocess.run(argv, cwd=workdir, check=True, capture_output=True, timeout=runtime + 60)
    j = json.loads(out.read_text())["jobs"][0]
    ios = float(j["read"]["total_ios"])
    cpu = (float(j["usr_cpu"]) + float(j["sys_cpu"])) / 100 * float(j["job_runtime"]) / 1000
    return float(j["read"]["iops"]), cpu / ios * 1e6


def log_bytes(workdir: Path, runtime: int) -> tuple[float, float]:
    """Raw and compressed bytes per second of the latency logs of the last run."""
    files = [*workdir.glob("fio_lat.*.log"), *workdir.glob("fio_clat_hist.*.log")]
    raw = sum(p.stat().st_size for p in files)
    packed = sum(len(zlib.compress(p.read_bytes())) for p in files)
    return raw / runtime, packed / runtime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    names = list(VARIANTS)
    print("IOPS as the median of each round's ratio to that round's run without latency logs "
          "(min-max of the rounds), CPU seconds per million I/Os (median)\n")
    print("| job | before: IOPS, CPU | " + " | ".join(f"{n}: IOPS ratio, CPU" for n in names[1:])
          + " | latency logs, bytes/s raw | stored (zlib) |")
    print("|---|" + "---|" * (len(names) + 2))
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volbench-fiolog-") as tmp:
        work = Path(tmp)
        for name, job in JOBS.items():
            got: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
            for i in range(args.rounds):  # each round runs every variant, order rotated
                for which in names[i % len(names):] + names[: i % len(names)]:
                    got[which].append(run(work, job, VARIANTS[which], args.runtime))
            run(work, job, VARIANTS["volbench now"], args.runtime)  # its logs, measured
            raw, packed = log_bytes(work, args.runtime)
            cells = [f"{statistics.median(x for x, _ in got['before']):,.0f}, "
                     f"{statistics.median(y for _, y in got['before']):.2f}"]
            for n in names[1:]:
                ratios = [b[0] / a[0] for a, b in zip(got["before"], got[n], strict=True)]
                cells.append(f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-"
                             f"{max(ratios):.2f}), {statistics.median(y for _, y in got[n]):.2f}")
            print(f"| {name} | " + " | ".join(cells) + f" | {raw:,.0f} | {packed:,.0f} |")


if __name__ == "__main__":
    main()
