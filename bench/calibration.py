"""Error rates of volbench's statistical rules, old and new side by side (seeded).

Tables (docs/statistics.md quotes them):
  adaptive   verdict shares for identical and different targets: the old rule (a plain
             5 % test after every round), the Pocock and O'Brien-Fleming designs, and a
             fixed design of `max` runs; lognormal noise, CV 1/2/5/20 %, true ratios
             1.00/1.01/1.02 (the threshold's edge)/1.05/2.0
  power      mean runs of the adaptive design against the smallest fixed design with
             at least the same power
  outliers   false flags per clean case by n: Iglewicz-Hoaglin's fixed |M| > 3.5 vs the
             cut-offs by n (normal data, and lognormal at CV 5 % and 20 %)
  --outlier-table   recompute those cut-offs (stats/outliers.py CUTOFFS)
  paired     independent-samples Welch (what the report uses) vs a paired per-round
             analysis, with iid noise and with a drifting machine state
  --cli      identical directory targets through the real CLI (a random lognormal sleep,
             repeat: {min: 3, max: 10, until: decided}): share called different
  intervals  coverage of the summary's 95 % intervals on positive runs: the mean's
             (Student's t, old, vs modified Cox on the logs, new) and the median's
             (order statistics from 6 runs, geometric below)
  curves     knee and SLA rate of an M/M/1 device (stats/simulate_curves.py): median
             knee error and SLA-rate bias, step rules (old) vs interpolation (new)
  family     identical targets, 2-8 targets x 1-3 workloads, through the report's own
             verdict code (bench/familysim.py): tables with any headline "faster/slower",
             each comparison at a plain 5 % (old) vs Holm over the headline family (new)
  cli-family six identical directory targets through `volbench run` + `report` (a
             `command` job sleeping a random lognormal time, 5 runs each): experiments
             with any headline "faster/slower"

    .venv/bin/python bench/calibration.py [--trials 1000] [--cli 100] [--only TABLE]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from volbench.stats import (
    SequentialDesign,
    Spending,
    Verdict,
    decide,
    outliers_calibrated,
    outliers_mad,
)
from volbench.stats.outliers import MAD_CONSTANT, outlier_cutoff
from volbench.stats.simulate import (
    Rates,
    lognormal,
    paired_rates,
    promise_rates,
    verdict_rates,
)

CVS = (0.01, 0.02, 0.05, 0.20)
RATIOS = (1.00, 1.01, 1.02, 1.05, 2.0)
FIRST, LAST = 3, 20


def designs() -> dict[str, tuple[int, int, SequentialDesign | None]]:
    return {
        "old (5 % each look)": (FIRST, LAST, None),
        "pocock": (FIRST, LAST, SequentialDesign(FIRST, LAST, Spending.POCOCK)),
        "obrien-fleming": (FIRST, LAST, SequentialDesign(FIRST, LAST, Spending.OBRIEN_FLEMING)),
        f"fixed {LAST}": (LAST, LAST, None),
    }


def _cell(rates: Rates, ratio: float) -> str:
    """The share that matters for this ratio: a wrong call, or the power."""
    different = rates.share(Verdict.BETTER, Verdict.WORSE)
    equivalent = rates.share(Verdict.EQUIVALENT)
    return f"diff {different:6.1%} eq {equivalent:6.1%} runs {rates.mean_runs:4.1f}"


def adaptive_table(trials: int) -> dict[tuple[float, float, str], Rates]:
    """Verdict shares per noise level, true ratio and design."""
    found = {}
    print(f"Adaptive repetition, {FIRST}..{LAST} runs per side, threshold 2 %, {trials} "
          "experiments per cell (diff = called faster/slower, eq = no difference)")
    for cv in CVS:
        for ratio in RATIOS:
            cells = []
            for name, (first, last, design) in designs().items():
                rates = verdict_rates(seed=int(cv * 1000 + ratio * 100), trials=trials, cv=cv,
                                      ratio=ratio, first=first, last=last, design=design)
                found[(cv, ratio, name)] = rates
                cells.append(f"{name}: {_cell(rates, ratio)}")
            print(f"CV {cv:4.0%} ratio {ratio:4.2f} | " + " | ".join(cells), flush=True)
    return found


def _fixed_power(cv: float, ratio: float, n: int, trials: int) -> float:
    return verdict_rates(seed=7, trials=trials, cv=cv, ratio=ratio, first=n, last=n,
                         design=None).share(Verdict.BETTER)


POWER_CELLS = ((0.02, 1.03), (0.02, 1.05), (0.05, 1.05), (0.05, 1.08), (0.20, 1.30))


def power_table(trials: int) -> None:
    """Mean runs of each design against the smallest fixed n with at least its power.

    Cells are differences beyond the threshold with power between ~50 % and ~100 %;
    at the threshold's edge itself (1.02) "faster" tops out at 95 % for every design,
    since 5 % of those experiments rightly fail to exclude "no difference"."""
    print("\nMean runs of the adaptive design vs the smallest fixed design with at least "
          "the same power (issue 13's target: <= 60 %)")
    for cv, ratio in POWER_CELLS:
        cells = []
        for name, (first, last, design) in designs().items():
            if design is None:
                continue
            rates = verdict_rates(seed=int(cv * 1000 + ratio * 100), trials=trials, cv=cv,
                                  ratio=ratio, first=first, last=last, design=design)
            power = rates.share(Verdict.BETTER)
            n = next((m for m in range(3, 201) if _fixed_power(cv, ratio, m, trials) >= power),
                     200)
            cells.append(f"{name}: power {power:5.1%}, {rates.mean_runs:4.1f} runs vs fixed "
                         f"{n} ({rates.mean_runs / n:4.0%})")
        print(f"CV {cv:4.0%} ratio {ratio:4.2f} | " + " | ".join(cells), flush=True)


def outlier_cutoffs(seed: int = 20261124) -> dict[int, float]:
    """95th percentile of max |M| over n standard normal values, n = 3..50, rounded up."""
    rng = random.Random(seed)

    def largest(n: int) -> float:
        xs = [rng.gauss(0.0, 1.0) for _ in range(n)]
        middle = statistics.median(xs)
        deviations = sorted(abs(x - middle) for x in xs)
        return MAD_CONSTANT * deviations[-1] / statistics.median(deviations)

    found = {}
    for n in range(3, 51):
        samples = 200_000 if n <= 10 else 60_000
        scores = sorted(largest(n) for _ in range(samples))
        found[n] = math.ceil(scores[math.ceil(0.95 * samples) - 1] * 100) / 100
    return found


def outlier_table(cases: int) -> None:
    print(f"\nOutlier false flags per clean case ({cases} cases per n; target <= 5 %): "
          "fixed |M| > 3.5 -> cut-off by n -> by n on both scales (values and logs)")
    cells = []
    for n in (3, 4, 5, 6, 7, 8, 10, 15, 20, 30, 50, 80):
        shares = []
        # normal: mean 100, sd 20 (the raw-scale rule does not depend on them; the log
        # scale needs positive values, and CV 20 % is where it would misfire alone)
        for name, draw in (("normal 20 %", None), ("lognormal 5 %", 0.05),
                           ("lognormal 20 %", 0.2)):
            rng = random.Random(n)
            sample = (lambda m, rng=rng: [rng.gauss(100.0, 20.0) for _ in range(m)]) \
                if draw is None else lognormal(rng, draw, 100.0)
            cases_drawn = [sample(n) for _ in range(cases)]
            old = sum(bool(outliers_mad(c)) for c in cases_drawn) / cases
            raw = sum(bool(outliers_mad(c, threshold=outlier_cutoff(n)))
                      for c in cases_drawn) / cases
            new = sum(bool(outliers_calibrated(c)) for c in cases_drawn) / cases
            shares.append(f"{name} {old:5.1%} -> {raw:4.1%} -> {new:4.1%}")
        cells.append(f"n {n:2d}: " + " | ".join(shares))
    print("\n".join(cells), flush=True)


def promise_table(trials: int) -> None:
    """How often running to the promised n decided (the old estimate vs the new one)."""
    print(f"\n'About N more runs needed': share decided after running to N ({trials} "
          "experiments per row; promises above 300 runs per side are not tried)")
    for cv in (0.02, 0.05, 0.20):
        for ratio in (1.00, 1.01, 1.05):
            for start in (3, 5):
                cells = []
                for name, old in (("old", True), ("new", False)):
                    p = promise_rates(seed=int(cv * 1000 + ratio * 100 + start), trials=trials,
                                      cv=cv, ratio=ratio, start=start, old=old)
                    cells.append(f"{name}: {p.kept}/{p.cases} = {p.rate:5.1%}, promised "
                                 f"{p.mean_promised:5.1f} per side")
                print(f"CV {cv:4.0%} ratio {ratio:4.2f} from {start} runs | "
                      + " | ".join(cells), flush=True)


def paired_table(trials: int) -> None:
    """Independent-samples Welch (the report) vs a paired per-round analysis."""
    print(f"\nIndependent (Welch) vs paired per-round log-ratios, 10 interleaved rounds, "
          f"run noise 2 %, {trials} experiments per row (diff = called faster/slower)")
    for drift in (0.0, 0.005, 0.01, 0.03):
        for ratio in (1.00, 1.03):
            welch, paired = paired_rates(seed=int(drift * 1000 + ratio * 100), trials=trials,
                                         n=10, ratio=ratio, noise=0.02, drift=drift)
            print(f"drift step {drift:5.1%} ratio {ratio:4.2f} | Welch: diff "
                  f"{welch.different:6.1%} eq {welch.share(Verdict.EQUIVALENT):6.1%} | paired: "
                  f"diff {paired.different:6.1%} eq {paired.share(Verdict.EQUIVALENT):6.1%}",
                  flush=True)


NAP = """#!/bin/sh
exec sleep "$(od -An -N4 -tu4 /dev/urandom | awk '{srand($1); u = rand(); v = rand();
  printf "%.5f", 0.02 * exp(0.1 * sqrt(-2 * log(1 - u)) * cos(6.2831853 * v))}')"
"""


def replay_old_rule(db: Path) -> tuple[int, int, int]:
    """The old rule replayed on the runs the CLI stored: per workload, test at a plain
    5 % after each round from 3 on and stop at the first decision. Returns (called
    different by the old rule, by a fixed design of all stored runs at 5 %, comparisons).
    Only exact where the new design ran every comparison to its maximum."""
    values: dict[tuple[str, str], list[float]] = {}
    with sqlite3.connect(db) as con:
        for workload, target, value in con.execute(
                "SELECT r.workload, r.target, m.value FROM metrics m JOIN runs r"
                " ON r.id = m.run_id WHERE m.name = 'real' AND r.status = 'ok'"
                " ORDER BY r.id"):
            values.setdefault((workload, target), []).append(float(value))
    old = fixed = total = 0
    for workload in sorted({w for w, _ in values}):
        a, b = values[(workload, "a")], values[(workload, "b")]
        n = min(len(a), len(b))
        total += 1
        fixed += decide(b[:n], a[:n], higher_is_better=False) in (Verdict.BETTER,
                                                                  Verdict.WORSE)
        for k in range(3, n + 1):
            verdict = decide(b[:k], a[:k], higher_is_better=False)
            if verdict is not Verdict.INCONCLUSIVE:
                old += verdict in (Verdict.BETTER, Verdict.WORSE)
                break
    return old, fixed, total


def run_and_report(work: Path, number: int, doc: dict[str, object]
                   ) -> tuple[Path, list[dict[str, object]]]:
    """`volbench run` the experiment, then its report's verdicts as JSON."""
    exp = work / f"e{number}.json"
    exp.write_text(json.dumps(doc))
    db = work / f"e{number}.db"
    cli = [sys.executable, "-m", "volbench.cli.main"]
    subprocess.run([*cli, "run", str(exp), "--db", str(db), "--quiet"], check=True,
                   capture_output=True, timeout=3600)
    out = subprocess.run([*cli, "report", "--db", str(db), "--format", "json"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    return db, list(json.loads(out)["verdicts"])


def cli_check(comparisons: int, per_experiment: int = 25) -> None:
    """Identical directory targets through `volbench run` and `volbench report`."""
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-calibration-"))
    nap = work / "nap.sh"
    nap.write_text(NAP)
    nap.chmod(0o755)
    for name in ("a", "b"):
        (work / name).mkdir()
    different = total = runs = old = fixed = 0
    start = time.monotonic()
    for number in range(max(1, comparisons // per_experiment)):
        doc = {
            "name": f"identical{number}", "workdir": str(work / "work"), "drop_caches": False,
            "targets": [{"name": t, "type": "directory", "path": str(work / t)} for t in "ab"],
            "workloads": [{"name": f"nap{i}", "tool": "command", "command": [str(nap)],
                           "estimate": "1s"} for i in range(per_experiment)],
            "repeat": {"min": 3, "max": 10, "until": "decided", "metrics": ["real"]},
            "baseline": "a",
        }
        db, verdicts = run_and_report(work, number, doc)
        for v in verdicts:
            if v["metric"] == "real":
                total += 1
                different += v["verdict"] in ("better", "worse")
                runs += v["n"]
        replayed = replay_old_rule(db)
        old += replayed[0]
        fixed += replayed[1]
    print(f"\nCLI, identical directory targets, random lognormal sleep, repeat 3..10: "
          f"{different} of {total} comparisons called different ({different / total:.1%}), "
          f"{runs / total:.1f} runs per side on average, {time.monotonic() - start:.0f} s; "
          f"on the same runs the old rule (5 % after every round) calls {old} different, "
          f"a fixed design of all runs at 5 % {fixed}")
    shutil.rmtree(work)


def interval_table(trials: int) -> None:
    from volbench.stats.simulate_intervals import coverage

    print(f"\n95 % intervals on positive runs ({trials} samples a cell): mean covered "
          "old (t) · new (Cox), share of old intervals below zero · median covered")
    print("| noise | n | mean: old t | below 0 | new | median |")
    print("|---|---|---|---|---|---|")
    for kind in ("lognormal", "normal", "stall"):
        for cv in (0.05, 0.20, 0.50):
            for n in (3, 5, 10):
                c = coverage(kind, cv, n, trials=trials)
                median = "—" if c.median is None else f"{c.median:.1%}"
                print(f"| {kind} CV {cv:.0%} | {n} | {c.mean_old:.1%} | "
                      f"{c.mean_old_negative:.1%} | {c.mean_new:.1%} | {median} |", flush=True)


def curve_table(rounds: int) -> None:
    from volbench.stats.simulate_curves import curve_errors

    print(f"\nM/M/1 load curve, steps 10-110 %, {rounds} rounds a cell: knee median error "
          "old → new, rounds whose old knee was the 25 % step, SLA-rate bias old → new")
    print("| p99 noise CV | probes | knee | old knee at 25 % | SLA rate |")
    print("|---|---|---|---|---|")
    for cv in (0.02, 0.05, 0.10, 0.20):
        for probes in (1, 3, 5):
            e = curve_errors(rounds, probes=probes, latency_cv=cv)
            print(f"| {cv:.0%} | {probes} | {e.knee_old:+.1%} → {e.knee_new:+.1%} | "
                  f"{e.knee_at_25:.0%} | {e.sla_old:+.2%} → {e.sla_new:+.2%} |", flush=True)


def family_table(trials: int) -> None:
    from familysim import family_rates

    print(f"\nidentical targets, any headline faster/slower per table ({trials} tables a "
          "cell, 5 runs each; old: each comparison at 5 % · new: Holm family)")
    print("| noise | targets × workloads | headline comparisons | old | new |")
    print("|---|---|---|---|---|")
    for kind, cv in (("lognormal", 0.05), ("lognormal", 0.20), ("heavy", 0.05),
                     ("busy", 0.05)):
        for targets in (2, 4, 8):
            for workloads in (1, 3):
                r = family_rates(targets, workloads, trials, kind=kind, cv=cv)
                print(f"| {kind} CV {cv:.0%} | {targets} × {workloads} | "
                      f"{(targets - 1) * workloads} | {r.share(r.old):.1%} | "
                      f"{r.share(r.new):.1%} |", flush=True)


def cli_family(experiments: int, targets: int = 6, runs: int = 5) -> None:
    """Six identical directory targets through the CLI: tables with a headline call."""
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-family-"))
    nap = work / "nap.sh"
    nap.write_text(NAP)
    nap.chmod(0o755)
    names = [f"t{i}" for i in range(targets)]
    for name in names:
        (work / name).mkdir()
    called = calls = 0
    start = time.monotonic()
    for number in range(experiments):
        doc = {
            "name": f"family{number}", "workdir": str(work / "work"), "drop_caches": False,
            "targets": [{"name": t, "type": "directory", "path": str(work / t)} for t in names],
            "workloads": [{"name": "nap", "tool": "command", "command": [str(nap)],
                           "estimate": "1s"}],
            "repeat": runs, "baseline": "t0",
        }
        db, found = run_and_report(work, number, doc)
        verdicts = [v for v in found if v.get("role") == "headline"]
        hits = sum(v["verdict"] in ("better", "worse") for v in verdicts)
        called += hits > 0
        calls += hits
        db.unlink()
    print(f"\nCLI, {targets} identical directory targets, random lognormal sleep, {runs} runs "
          f"each: {called} of {experiments} experiments ({called / experiments:.1%}) had a "
          f"headline faster/slower ({calls} calls), {time.monotonic() - start:.0f} s")
    shutil.rmtree(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--cli", type=int, default=0, metavar="COMPARISONS",
                        help="also run this many identical-target comparisons via the CLI")
    parser.add_argument("--skip-adaptive", action="store_true")
    parser.add_argument("--power-only", action="store_true")
    parser.add_argument("--outlier-table", action="store_true",
                        help="recompute the outlier cut-offs by n (a few minutes)")
    parser.add_argument("--outlier-cases", type=int, default=4000)
    parser.add_argument("--promise-trials", type=int, default=300)
    parser.add_argument("--only", choices=("adaptive", "power", "outliers", "promise",
                                           "paired", "cli", "family", "cli-family",
                                           "intervals", "curves"))
    parser.add_argument("--experiments", type=int, default=60,
                        help="experiments of the cli-family check")
    args = parser.parse_args()
    wanted = {args.only} if args.only else {"adaptive", "power", "outliers", "promise",
                                            "paired"}
    if args.skip_adaptive:
        wanted -= {"adaptive", "power"}
    if args.power_only:
        wanted = {"power"}
    if "adaptive" in wanted:
        adaptive_table(args.trials)
    if "power" in wanted:
        power_table(args.trials)
    if args.outlier_table:
        print(outlier_cutoffs())
    if "outliers" in wanted:
        outlier_table(args.outlier_cases)
    if "promise" in wanted:
        promise_table(args.promise_trials)
    if "paired" in wanted:
        paired_table(args.trials)
    if "curves" in wanted:
        curve_table(args.trials * 2)
    if "intervals" in wanted:
        interval_table(args.trials * 4)
    if "family" in wanted:
        family_table(min(args.trials, 400))
    if "cli-family" in wanted:
        cli_family(args.experiments)
    if args.cli or "cli" in wanted:
        cli_check(args.cli or 100)


if __name__ == "__main__":
    main()
