"""Adaptive vs fixed repetition: same verdicts with at most half the runs?

Targets: `base` capped at 500 IOPS, `double` at 1000 (a clear difference) and
`twin` at 500 (no difference). Design A: a fixed 10 rounds. Design B:
`repeat: {min: 3, max: 20, until: decided}`. Both verdicts come from the same
statistics (volbench.stats.compare on IOPS, threshold 2 %); the adaptive design's as
looks of its group-sequential design, as the report gives them.

    sudo .venv/bin/python bench/adaptive.py [--runtime 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from common import metric_values, volbench, write_experiment
from volbench.stats import SequentialDesign, compare, verdict_text


def design(work: Path, name: str, repeat: Any, runtime: int) -> dict[str, Any]:
    return {
        "name": name, "workdir": str(work),
        "targets": [{"name": "base", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": 500}},
                    {"name": "double", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": 1000}},
                    {"name": "twin", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": 500}}],
        "workloads": [{"name": "rand4k", "tool": "fio", "rw": "randread", "bs": "4k",
                       "iodepth": 16, "size": "64M", "runtime": runtime}],
        "repeat": repeat, "baseline": "base",
        "thresholds": {"iops": 0.02},
    }


def verdicts(db: Path, design: SequentialDesign | None) -> dict[str, tuple[str, str]]:
    """Verdict (category, text) of each target vs base on IOPS."""
    iops = metric_values(db, "iops", op="read")
    found = {}
    for target in ("double", "twin"):
        result = compare(iops[target], iops["base"], higher_is_better=True, design=design)
        found[target] = (str(result.verdict), verdict_text(result, "IOPS"))
    return found


def runs_by_target(db: Path) -> Counter[str]:
    with sqlite3.connect(db) as con:
        return Counter(t for (t,) in con.execute("SELECT target FROM runs WHERE status='ok'"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    results = {}
    for name, repeat in (("fixed", 10), ("adaptive", {"min": 3, "max": 20,
                                                      "until": "decided"})):
        exp = write_experiment(work / f"{name}.yaml", design(work, name, repeat, args.runtime))
        db = work / f"{name}.db"
        wall = volbench("run", str(exp), "--db", str(db), "--quiet")
        looks = SequentialDesign(3, 20) if name == "adaptive" else None
        results[name] = (verdicts(db, looks), runs_by_target(db), wall)
    for name, (found, counts, wall) in results.items():
        print(f"{name:9} runs {sum(counts.values()):3d} {dict(counts)}  wall {wall:6.1f} s")
        for target, (_, text) in found.items():
            print(f"          {target} vs base: {text}")
    same = all(results["fixed"][0][t][0] == results["adaptive"][0][t][0]
               for t in ("double", "twin"))
    ratio = sum(results["adaptive"][1].values()) / sum(results["fixed"][1].values())
    print(f"same verdicts: {same}; adaptive used {ratio:.0%} of the fixed design's runs "
          f"(target: same verdicts with at most 50 %)")


if __name__ == "__main__":
    main()
