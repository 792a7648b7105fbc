"""Overhead: share of an experiment's wall time spent outside the workload processes.

Two loop-disk targets × two fio cases × 3 repetitions of 10-second jobs. Wall time of
`volbench run` against the sum of the measured fio processes' own durations.
Target (issue 25): <= 1 % outside the workload processes, <= 50 ms per run between two
runs (the median gap printed last: parse, store, sync, start the next).

    sudo .venv/bin/python bench/overhead.py [--runtime 10]
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
from pathlib import Path

from common import volbench, write_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    exp = write_experiment(work / "exp.yaml", {
        "name": "overhead", "workdir": str(work),
        "targets": [{"name": "xfs", "type": "loopdisk", "size": "1G"},
                    {"name": "ext4", "type": "loopdisk", "size": "1G", "fs": "ext4"}],
        "workloads": [
            {"name": "rand4k", "tool": "fio", "rw": "randread", "bs": "4k", "iodepth": 16,
             "size": "256M", "runtime": args.runtime},
            {"name": "seq1m", "tool": "fio", "rw": "read", "bs": "1M", "iodepth": 4,
             "size": "256M", "runtime": args.runtime}],
        "repeat": args.repeat})
    db = work / "overhead.db"
    wall = volbench("run", str(exp), "--db", str(db), "--quiet")
    with sqlite3.connect(db) as con:
        inside, runs = con.execute("SELECT SUM(ended - started), COUNT(*) FROM runs "
                                   "WHERE status = 'ok'").fetchone()
        first = con.execute("SELECT MIN(started) FROM runs").fetchone()[0]
        spans = con.execute("SELECT target, started, ended FROM runs ORDER BY started").fetchall()
        created = con.execute("SELECT created FROM experiments").fetchone()[0]
    outside = wall - inside
    print(f"{runs} runs of {args.runtime} s: wall {wall:.1f} s, inside fio {inside:.1f} s, "
          f"outside {outside:.1f} s = {outside / wall * 100:.1f} % (target <= 5 %)")
    print(f"of which before the first run (start-up, environment capture, target builds, "
          f"fio layout): {first - created:.1f} s; per run otherwise: "
          f"{(outside - (first - created)) / runs:.2f} s")
    gaps = [b[1] - a[2] for a, b in itertools.pairwise(spans)]
    if gaps:
        print(f"gap between two runs: median "
              f"{statistics.median(gaps) * 1000:.0f}"
              f" ms, max {max(gaps) * 1000:.0f} ms over {len(gaps)} gaps (target <= 50 ms)")


if __name__ == "__main__":
    main()
