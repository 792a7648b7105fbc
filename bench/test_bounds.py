"""The timing ground truths' spread, quiet and beside a CPU hog (issue 35).

Runs chosen tests (pytest node ids or files) ROUNDS times in each condition, with
VOLBENCH_TEST_BOUNDS set so every `tests/bounds.py:within` check records its value and
bound, and prints one row per check: its bound, the values seen (min, median, max) in
each condition, and the smallest margin to the bound as a share of the bound. A condition:

- quiet: nothing started beside the tests;
- hog: `stress-ng --cpu N` (N = the cores) at full load beside them, the reproducible
  stand-in for a busy machine (the CI machines' load and steal vary: 33 % steal was seen).

The host's load and steal during each round are printed too (tests/hostload.py's figures).

    sudo .venv/bin/python bench/test_bounds.py [--rounds 3] [--conditions quiet,hog]
        [--nice N] [--json OUT] TEST [TEST ...]

--nice 10 runs the tests as scripts/test runs tests/unit + tests/system (niced beside the
lab), the hog staying at nice 0: the harder and the truer condition for those tests.
    e.g. bench/test_bounds.py tests/system/test_curves_run.py tests/lab/test_nfs_hop_lab.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import hostload  # noqa: E402


def hog(condition: str) -> subprocess.Popen[bytes] | None:
    """The load beside the tests (None when quiet)."""
    if condition == "quiet":
        return None
    if condition != "hog":
        raise SystemExit(f"unknown condition {condition!r}: quiet or hog")
    cores = str(os.cpu_count() or 1)
    return subprocess.Popen(["stress-ng", "--cpu", cores, "--cpu-method", "matrixprod",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_round(tests: list[str], condition: str, record: Path, nice: int = 0
              ) -> dict[str, Any]:
    recorder = hostload.Recorder().start()
    load = hog(condition)
    started = time.time()
    niced = ["nice", "-n", str(nice)] if nice else []
    try:
        done = subprocess.run([*niced, sys.executable, "-m", "pytest", "-q", "-p",
                               "no:cacheprovider", *tests], cwd=ROOT,
                              env={**os.environ, "VOLBENCH_TEST_BOUNDS": str(record)},
                              check=False)
    finally:
        if load is not None:
            load.terminate()
            load.wait(timeout=30)
        recorder.stop()
    return {"condition": condition, "exit": done.returncode, "seconds": time.time() - started,
            "host": recorder.describe(started, time.time())}


def table(lines: list[dict[str, Any]], conditions: list[str]) -> list[str]:
    by_check: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for line in lines:
        by_check.setdefault(line["check"], {}).setdefault(line["condition"], []).append(line)
    rows = ["| check | bound | " + " | ".join(f"{c}: min / median / max (n)" for c in conditions)
            + " | smallest margin |", "|---|---|" + "---|" * len(conditions) + "---|"]
    for check, seen in sorted(by_check.items()):
        some = next(iter(seen.values()))[0]
        bound = " … ".join(f"{b:.4g}" if b is not None else "" for b in (some["low"],
                                                                          some["high"]))
        cells, margins = [], []
        for condition in conditions:
            values = [x["value"] for x in seen.get(condition, [])]
            if not values:
                cells.append("–")
                continue
            cells.append(f"{min(values):.4g} / {statistics.median(values):.4g} / "
                         f"{max(values):.4g} ({len(values)})")
            for x in seen[condition]:
                for side, sign in (("low", 1), ("high", -1)):
                    if x[side]:
                        margins.append(sign * (x["value"] - x[side]) / abs(x[side]))
        margin = f"{min(margins):+.0%}" if margins else "–"
        rows.append(f"| {check} | {bound} | " + " | ".join(cells) + f" | {margin} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conditions", default="quiet,hog")
    parser.add_argument("--nice", type=int, default=0, help="run the tests at this nice")
    parser.add_argument("--json", type=Path, help="write every check's values here")
    args = parser.parse_args()
    conditions = args.conditions.split(",")
    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for condition in conditions:
                record = Path(tmp) / f"{condition}-{r}.jsonl"
                info = one_round(args.tests, condition, record, args.nice)
                print(f"round {r + 1} {condition}: exit {info['exit']} in "
                      f"{info['seconds']:.0f} s; {info['host']}", flush=True)
                if record.exists():
                    for text in record.read_text().splitlines():
                        lines.append({**json.loads(text), "condition": condition,
                                      "round": r, "host": info["host"]})
    print("\n".join(table(lines, conditions)))
    if args.json:
        args.json.write_text(json.dumps(lines, indent=1))


if __name__ == "__main__":
    main()
