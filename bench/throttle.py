"""Throttle accuracy: measured IOPS and bandwidth / configured cap on throttled loop disks.

Target: within ±3 % of the cap. Runs one volbench experiment (3 repetitions).

    sudo .venv/bin/python bench/throttle.py [--runtime 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import median, metric_values, volbench, write_experiment

IOPS_CAPS = (250, 500, 1000, 2000)
BPS_CAP = 50 * 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    targets = [{"name": f"iops{c}", "type": "loopdisk", "size": "1G",
                "limits": {"read_iops": c, "write_iops": c}} for c in IOPS_CAPS]
    targets.append({"name": "bps50M", "type": "loopdisk", "size": "1G",
                    "limits": {"read_bps": "50M", "write_bps": "50M"}})
    exp = write_experiment(work / "exp.yaml", {
        "name": "throttle", "workdir": str(work), "targets": targets,
        "workloads": [
            {"name": "rand4k", "tool": "fio", "rw": ["randread", "randwrite"], "bs": "4k",
             "iodepth": 16, "size": "256M", "runtime": args.runtime},
            {"name": "seq1m", "tool": "fio", "rw": ["read", "write"], "bs": "1M", "iodepth": 4,
             "size": "256M", "runtime": args.runtime}],
        "repeat": args.repeat})
    db = work / "throttle.db"
    volbench("run", str(exp), "--db", str(db), "--quiet")
    worst = 0.0
    for op in ("read", "write"):
        iops = metric_values(db, "iops", op=op)
        bw = metric_values(db, "bw", op=op)
        for cap in IOPS_CAPS:
            # The 4k runs of this target are its first values of each op (rand4k comes first).
            values = iops[f"iops{cap}"][0::2]
            ratio = median(values) / cap
            worst = max(worst, abs(ratio - 1))
            print(f"{op:5} 4k  cap {cap:5d} IOPS: measured {median(values):8.1f}  "
                  f"ratio {ratio:.3f}")
        values = bw["bps50M"][1::2]
        ratio = median(values) / BPS_CAP
        worst = max(worst, abs(ratio - 1))
        print(f"{op:5} 1M  cap  50 MiB/s: measured {median(values) / 2**20:8.2f} MiB/s "
              f"ratio {ratio:.3f}")
    print(f"largest deviation from a cap: {worst * 100:.1f} % (target within ±3 %)")


if __name__ == "__main__":
    main()
