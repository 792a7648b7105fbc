"""Fidelity: the same fio job run by volbench and by plain fio, interleaved in pairs.

Both run on one xfs loop disk (direct I/O), caches dropped before plain fio (volbench
syncs only: direct I/O bypasses the cache), in ABBA order so drift cancels. The claim
is the interval, not the point: the 95 % interval of the geometric mean of the pair
ratios (t on log-ratios) and the distribution-free interval of their median, each
with its lower end against the target 0.99.

    sudo .venv/bin/python bench/fidelity.py [--pairs 20] [--runtime 10]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from common import median, metric_values, volbench, write_experiment
from volbench.engine.experiment import parse_document
from volbench.stats.summary import mean_interval, median_interval
from volbench.system import journal
from volbench.system.recipe import Recipe
from volbench.targets import BuildContext, open_target

JOB = ["--rw=randread", "--bs=4k", "--iodepth=16", "--direct=1", "--ioengine=libaio",
       "--size=256M"]


def plain_fio(path: Path, runtime: int, cgroup: Path | None) -> float:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")

    def join() -> None:  # the same throttle as volbench's run, when there is one
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text("0")

    out = subprocess.run(["fio", "--name=plain", f"--filename={path / 'plain.dat'}", *JOB,
                          f"--runtime={runtime}", "--time_based=1", "--output-format=json"],
                         capture_output=True, text=True, check=True, timeout=runtime * 5 + 60,
                         preexec_fn=join)
    return float(json.loads(out.stdout)["jobs"][0]["read"]["iops"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--runtime", type=int, default=10)
    parser.add_argument("--read-iops", type=int, default=0,
                        help="throttle both sides to this many read IOPS (blkio): an exact "
                             "speed, so the ratio shows what volbench loses without the "
                             "host's noise")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    limits = {"limits": {"read_iops": args.read_iops}} if args.read_iops else {}
    target = parse_document({"name": "b", "targets": [
        {"name": "disk", "type": "loopdisk", "size": "1G", **limits}],
        "workloads": [{"tool": "fio", "name": "x"}]})
    with journal.opened("bench") as jrnl, jrnl.scope() as scope:
        ctx = BuildContext(scope, Recipe(scope), work)
        with open_target(target.targets[0], ctx) as built:
            assert built.path is not None
            subprocess.run(["fio", "--name=layout", f"--filename={built.path / 'plain.dat'}",
                            "--size=256M", "--rw=write", "--bs=1M", "--direct=1"],
                           check=True, capture_output=True, timeout=600)
            exp = write_experiment(work / "exp.yaml", {
                "name": "fidelity", "workdir": str(work / "vb"),
                "targets": [{"name": "disk", "type": "directory", "path": str(built.path),
                             **limits}],
                "workloads": [{"name": "randread", "tool": "fio", "rw": "randread", "bs": "4k",
                               "iodepth": 16, "size": "256M", "runtime": args.runtime}],
                "repeat": 1})
            db = work / "fidelity.db"
            plain: list[float] = []
            for i in range(args.pairs):
                order = ("plain", "volbench") if i % 2 == 0 else ("volbench", "plain")
                for who in order:
                    if who == "plain":
                        plain.append(plain_fio(built.path, args.runtime, built.cgroup))
                    else:
                        volbench("run", str(exp), "--db", str(db), "--quiet")
            ours = metric_values(db, "iops", op="read")["disk"]
    report(plain, ours)


def report(plain: list[float], ours: list[float], target: float = 0.99) -> None:
    ratios = [a / b for a, b in zip(ours, plain, strict=True)]
    logs = [math.log(r) for r in ratios]
    geo = mean_interval(logs)
    med = median_interval(ratios)
    print(f"plain fio IOPS:  {[round(v) for v in plain]}")
    print(f"volbench IOPS:   {[round(v) for v in ours]}")
    print(f"pair ratios:     {[round(r, 3) for r in ratios]}")
    print(f"{len(ratios)} pairs: geometric mean ratio {math.exp(statistics.fmean(logs)):.4f}"
          + (f", 95 % interval {math.exp(geo.low):.4f}-{math.exp(geo.high):.4f}" if geo
             else "") + f"; median ratio {median(ratios):.4f}"
          + (f", 95 % interval {med.low:.4f}-{med.high:.4f}" if med else ""))
    low = math.exp(geo.low) if geo else float("nan")
    verdict = "says so" if low >= target else "cannot say so yet (more pairs, quieter host)"
    print(f"target: volbench >= {target} of plain fio; the interval's lower end {low:.4f} "
          f"{verdict}")

if __name__ == "__main__":
    main()
