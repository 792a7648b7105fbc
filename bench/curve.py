"""Load curves of a 500- and a 1000-IOPS disk, side by side in one experiment.

RAM disks (zram) throttled with cgroup blkio to 500 and 1000 read IOPS, fio randread 4k
at iodepth 16, steps 10 … 110 % of each round's measured saturation, an objective of
p99 <= 5 ms searched with 3 bisection probes per round. Prints per disk the saturation
rate against its cap, the knee, the rate within the objective, and the curve (offered,
delivered, mean and merged p99 latency); writes the latency-vs-IOPS chart.

    sudo .venv/bin/python bench/curve.py [--runtime 4] [--repeat 3] \
        [--svg docs/img/curve-500-1000.svg]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import volbench, write_experiment

CAPS = (500, 1000)
STEPS = ["10%", "25%", "50%", "75%", "90%", "100%", "110%"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--svg", type=Path, help="where to copy the latency-vs-IOPS chart")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    exp = write_experiment(work / "exp.yaml", {
        "name": "curve", "workdir": str(work), "baseline": "d500",
        "targets": [{"name": f"d{cap}", "type": "zram", "size": "300M", "fs": "none",
                     "limits": {"read_iops": cap}} for cap in CAPS],
        "workloads": [{"name": "curve", "tool": "fio", "rw": "randread", "bs": "4k",
                       "iodepth": 16, "size": "256M", "runtime": args.runtime,
                       "load": {"steps": STEPS}, "sla": {"p99": "5ms", "probes": 3}}],
        "repeat": args.repeat})
    db = work / "curve.db"
    wall = volbench("run", str(exp), "--db", str(db), "--quiet")
    out = subprocess.run([sys.executable, "-m", "volbench.cli.main", "report", "--db", str(db),
                          "--format", "json"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    for c in data["curves"]:
        cap = int(c["target"][1:])
        sat, knee, sla = c["saturation_iops"], c["knee_iops"], c["sla_iops"]
        print(f"{c['target']}: saturation {sat:.1f} IOPS ({sat / cap:.3f} of the cap), "
              f"knee {knee or 0:.0f}, within p99 <= 5 ms {sla or 0:.0f} IOPS "
              f"[{(c['sla_iops_ci'] or [0, 0])[0]:.0f}, {(c['sla_iops_ci'] or [0, 0])[1]:.0f}]")
        for p in c["points"]:
            offered = f"{p['offered']:7.1f}" if p["offered"] is not None else "   full"
            print(f"  {p['step']:>6} offered {offered} delivered {p['iops']:7.1f}  "
                  f"mean {p['lat_mean'] * 1e3:7.3f} ms  p99 {p['clat_p99'] * 1e3:7.3f} ms")
    for v in data["verdicts"]:
        if v["metric"] in ("saturation_iops", "knee_iops", "sla_iops"):
            print(f"verdict {v['target']} vs {v['baseline']} on {v['metric']}: {v['text']}")
    charts = work / "charts"
    volbench("report", "--db", str(db), "--charts", str(charts))
    chart = next(charts.glob("*latency-curve.svg"))
    if args.svg:
        args.svg.write_text(chart.read_text())
    print(f"{len(data['runs'])} runs in {wall:.0f} s; chart {args.svg or chart}; db {db}")


if __name__ == "__main__":
    main()
