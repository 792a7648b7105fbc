"""Issue 32: every stated error rate on the paths users take, old method beside new.

The old methods are volbench's modules at commit OLD (read from git into modules of their
own), run on the same seeded series as the new ones. Sections (each a table, docs/time.md
and docs/statistics.md):

    .venv/bin/python bench/claims.py --case     [--trials 1000]  # the case-level gate
    .venv/bin/python bench/claims.py --case-true [--trials 500]  # ... on bursting runs
    .venv/bin/python bench/claims.py --run      [--trials 2000]  # per-run false flags by length
    .venv/bin/python bench/claims.py --hard     [--trials 1000]  # stalls at the ends, t3, busy
    .venv/bin/python bench/claims.py --burst    [--trials 1000]  # true bursts: found, intervals
    .venv/bin/python bench/claims.py --steady   [--trials 2000]  # steady: {within: run}
    .venv/bin/python bench/claims.py --steady-hard [--trials 2000]  # t3, a busy host
    .venv/bin/python bench/claims.py --promise  [--trials 2000]  # "N more runs", cap 1000
    .venv/bin/python bench/claims.py --promise-hard [--trials 2000]  # t3, busy: old/new
    .venv/bin/python bench/claims.py --intervals                 # the issue's examples
    .venv/bin/python bench/claims.py --cli      [--cases 200]    # imported pgbench -P 1 runs

Every figure is a share with its 95 % Wilson interval (Monte-Carlo error).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from busysim import MODELS, busy_run, promise_trials  # bench/, beside this script
from volbench.core.model import Metric, Parsed, RunResult, Series, Status
from volbench.report import timeline
from volbench.stats import compare, decide, power
from volbench.stats.changepoint import BURST, FLAT, regimes
from volbench.stats.meanratio import mean_ratio
from volbench.stats.seriessim import Noise, ends_stalled, fio_stop_window, series
from volbench.stats.steady import level_check
from volbench.stats.summary import mean_interval
from volbench.stats.windows import with_windows

OLD = "2cbc049"  # main before issue 32
ROOT = Path(__file__).resolve().parent.parent


def old_module(path: str, name: str, swaps: dict[str, str] | None = None) -> types.ModuleType:
    """src/volbench/`path` at commit OLD as module `name` (imports rewritten by `swaps`)."""
    source = subprocess.run(["git", "show", f"{OLD}:src/volbench/{path}"], cwd=ROOT,
                            capture_output=True, text=True, check=True, timeout=30).stdout
    for old, new in (swaps or {}).items():
        source = source.replace(old, new)
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def wilson(k: int, n: int) -> str:
    """"12.3 % [10.1, 14.8]": k of n with its 95 % Wilson interval."""
    if n == 0:
        return "—"
    z, p = 1.96, k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return f"{p:.1%} [{max(0.0, c - h):.1%}, {min(1.0, c + h):.1%}]"


# -- the case-level gate and the detector ---------------------------------------------------

class Pipeline:
    """The detector, the window metrics and the case gate of one version."""

    def __init__(self, old: bool) -> None:
        if old:
            cp = old_module("stats/changepoint.py", "changepoint_old")
            win = old_module("stats/windows.py", "windows_old",
                             {"from volbench.stats.changepoint import":
                              "from changepoint_old import"})
            tl = old_module("report/timeline.py", "timeline_old")
            self.regimes: Callable[[Sequence[float]], Any] = cp.regimes
            self.with_windows: Callable[[Parsed], Parsed] = win.with_windows
            self.agreed: Callable[[Sequence[RunResult]], dict[Any, Any]] = tl.agreed
        else:
            self.regimes, self.with_windows, self.agreed = regimes, with_windows, \
                timeline.agreed

    def run(self, values: list[float], rep: int) -> RunResult:
        points = tuple((float(i + 1), v) for i, v in enumerate(values))
        mean = statistics.fmean(values)
        whole = (Metric("iops", mean, "op/s", {"op": "read"}),
                 Metric("lat_mean", 32 / max(mean, 1.0), "s", {"op": "read"}))
        parsed = self.with_windows(Parsed(whole, (Series("iops", "op/s", points,
                                                         {"op": "read"}),)))
        return RunResult("t", "w", {"bs": "4k"}, rep + 1, Status.OK, 100.0 * rep,
                         100.0 * rep + len(values), parsed=parsed)


CASE_NOISE = (Noise(0.15), Noise(0.15, 0.5), Noise(0.05, 0.9), Noise(0.15, 0.9))


def case_table(trials: int) -> None:
    old, new = Pipeline(True), Pipeline(False)
    print(f"| run | noise | runs a case | story on a flat case: old | new |  ({trials} "
          "cases a cell, 95 % Wilson intervals)")
    print("|---|---|---|---|---|")
    for seconds in (30, 60):
        for noise in CASE_NOISE:
            for runs in (1, 3, 5):
                counts = []
                for pipe in (old, new):
                    rng = random.Random(32_000 + seconds * 10 + runs)
                    told = sum(bool(pipe.agreed([pipe.run(series(rng, [500.0] * seconds,
                                                                 noise), i)
                                                 for i in range(runs)]))
                               for _ in range(trials))
                    counts.append(told)
                print(f"| {seconds} s | {noise.label} | {runs} | {wilson(counts[0], trials)} "
                      f"| {wilson(counts[1], trials)} |", flush=True)


TRUE_CASES = ((40, 10, 3.0, Noise(0.15, 0.9)), (60, 20, 2.0, Noise(0.15, 0.9)),
              (60, 20, 2.0, Noise(0.05)), (30, 8, 3.0, Noise(0.15, 0.9)))


def case_true_table(trials: int) -> None:
    """Cases of runs that all burst: how often the case tells the burst story."""
    old, new = Pipeline(True), Pipeline(False)
    print(f"| run | burst | noise | runs a case | burst story told: old | new |  ({trials} "
          "cases a cell)")
    print("|---|---|---|---|---|---|")
    for seconds, burst, ratio, noise in TRUE_CASES:
        for runs in (3, 5):
            counts = []
            for pipe in (old, new):
                rng = random.Random(37_000 + seconds + runs)
                levels = [500.0 * ratio] * burst + [500.0] * (seconds - burst)
                told = 0
                for _ in range(trials):
                    found = pipe.agreed([pipe.run(series(rng, levels, noise), i)
                                         for i in range(runs)])
                    told += any(f[0].kind == BURST for f in found.values())
                counts.append(told)
            print(f"| {seconds} s | {ratio:g}x for {burst} s | {noise.label} | {runs} "
                  f"| {wilson(counts[0], trials)} | {wilson(counts[1], trials)} |", flush=True)


def run_table(trials: int) -> None:
    old = Pipeline(True)
    print(f"| run | noise | flat flagged: old | new |  ({trials} series a cell)")
    print("|---|---|---|---|")
    for noise in (Noise(0.15, 0.9), Noise(0.15, 0.9, stalls=2), Noise(0.10, 0.9, heavy=True)):
        for seconds in (10, 15, 20, 25, 30, 40, 60, 120, 300):
            counts = []
            for detector in (old.regimes, regimes):
                rng = random.Random(33_000 + seconds)
                counts.append(sum(detector(series(rng, [500.0] * seconds, noise)).kind
                                  not in (FLAT, "too short") for _ in range(trials)))
            print(f"| {seconds} s | {noise.label} | {wilson(counts[0], trials)} "
                  f"| {wilson(counts[1], trials)} |", flush=True)


BURSTS = ((40, 10, 3.0, Noise(0.15, 0.9)), (30, 8, 3.0, Noise(0.15, 0.9)),
          (60, 20, 2.0, Noise(0.15, 0.9)), (300, 20, 2.0, Noise(0.15, 0.9)),
          (60, 20, 2.0, Noise(0.05)), (60, 20, 2.0, Noise(0.05, 0.5)),
          (30, 10, 2.0, Noise(0.05)), (20, 6, 3.0, Noise(0.15, 0.9)),
          (15, 5, 3.0, Noise(0.15, 0.9)), (15, 5, 3.0, Noise(0.05)))


def burst_table(trials: int) -> None:
    old = Pipeline(True)
    print(f"| run | burst | noise | found: old | new | new: early level's interval covers "
          f"| sustained's covers |  ({trials} series a cell)")
    print("|---|---|---|---|---|---|---|")
    for seconds, burst, ratio, noise in BURSTS:
        rng = random.Random(34_000 + seconds + burst)
        runs = [series(rng, [500.0 * ratio] * burst + [500.0] * (seconds - burst), noise)
                for _ in range(trials)]
        was = sum(old.regimes(v).kind == BURST for v in runs)
        found = [got for v in runs if (got := regimes(v)).kind == BURST]
        early = sum(g.early_interval[0] <= 500.0 * ratio <= g.early_interval[1]
                    for g in found if g.early_interval)
        sustained = sum(g.sustained_interval[0] <= 500.0 <= g.sustained_interval[1]
                        for g in found if g.sustained_interval)
        print(f"| {seconds} s | {ratio:g}x for {burst} s | {noise.label} | {wilson(was, trials)} "
              f"| {wilson(len(found), trials)} | {wilson(early, len(found))} "
              f"| {wilson(sustained, len(found))} |", flush=True)


# -- steady: {within: run} -------------------------------------------------------------------

STEADY = ((5, Noise(0.02), 0.0), (5, Noise(0.05), 0.0), (5, Noise(0.10), 0.0),
          (5, Noise(0.10, 0.5), 0.0), (5, Noise(0.05, 0.9), 0.0), (30, Noise(0.05), 0.0),
          (30, Noise(0.10), 0.0), (30, Noise(0.10, 0.5), 0.0), (30, Noise(0.05, 0.9), 0.0),
          (300, Noise(0.10), 0.0), (300, Noise(0.10, 0.5), 0.0), (300, Noise(0.05, 0.9), 0.0),
          (600, Noise(0.05), -0.005), (600, Noise(0.10), -0.005),
          (600, Noise(0.10, 0.5), -0.005))

# Off the rule's calibration: heavy tails and a busy host (--steady-hard).
STEADY_HARD = ((5, Noise(0.10, 0.5, heavy=True), 0.0), (5, Noise(0.05, 0.5, busy=0.1), 0.0),
               (30, Noise(0.10, 0.5, heavy=True), 0.0), (30, Noise(0.05, 0.5, busy=0.1), 0.0),
               (300, Noise(0.10, heavy=True), 0.0), (300, Noise(0.10, 0.5, heavy=True), 0.0),
               (300, Noise(0.05, busy=0.1), 0.0), (300, Noise(0.05, 0.5, busy=0.1), 0.0))


def steady_table(trials: int, cells: tuple[tuple[int, Noise, float], ...] = STEADY) -> None:
    old = old_module("stats/steady.py", "steady_old")
    print(f"| window | noise | drift | steady (fio stops on its slope criterion): old | new "
          f"| drift test false alarms on flat windows (stated 1 %): old | new |  ({trials} "
          "runs a cell; runs of 60 s, or twice the window)")
    print("|---|---|---|---|---|---|---|")
    for window, noise, drift in cells:
        rng = random.Random(35_000 + window)
        steady = [0, 0]
        alarms = [0, 0]
        for _ in range(trials):
            seconds = max(60, 2 * window)
            run = series(rng, [500 * (1 + drift * t / 60) for t in range(seconds)], noise)
            chosen = fio_stop_window(run, window, 0.10 / (window - 1))
            flat = series(rng, [500.0] * window, noise)
            for i, check in enumerate((old.level_check, level_check)):
                got = None if chosen is None else check(chosen)
                steady[i] += got is not None and got.steady(0.20, 0.10)
                alarms[i] += check(flat).drifting
        flats = "—" if drift else None
        print(f"| {window} s | {noise.label} | {drift * 100:g} %/min | {wilson(steady[0], trials)} "
              f"| {wilson(steady[1], trials)} | {flats or wilson(alarms[0], trials)} "
              f"| {flats or wilson(alarms[1], trials)} |", flush=True)


# -- "N more runs" ----------------------------------------------------------------------------

def run_noise(rng: random.Random, sigma: float, kind: str) -> float:
    """One run's factor: lognormal; "t3": Student t3 logs (same variance); "busy": a busy
    host, lognormal and 20 % of runs slowed to 40-90 % (bench/answer_coverage.py's)."""
    if kind == "t3":
        return math.exp(sigma * rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2)))
    if kind == "busy":
        return busy_run(rng, sigma)[0]
    return math.exp(rng.gauss(-sigma * sigma / 2, sigma))


def promise_cell(cv: float, ratio: float, start: int, trials: int, seed: int,
                 kind: str = "lognormal") -> tuple[int, int, int]:
    """(undecided, numbers printed, kept) at the product's cap of 1000 runs per side."""
    rng = random.Random(seed)
    sigma = math.sqrt(math.log1p(cv * cv))

    def draw(scale: float, n: int) -> list[float]:
        return [scale * run_noise(rng, sigma, kind) for _ in range(n)]

    undecided = printed = kept = 0
    for _ in range(trials):
        c, b = draw(ratio, start), draw(1.0, start)
        first = compare(c, b, higher_is_better=True)
        if first.verdict.value != "inconclusive":
            continue
        undecided += 1
        if first.runs_needed_capped or first.runs_needed is None:
            continue
        printed += 1
        n = first.runs_needed
        c += draw(ratio, n - start)
        b += draw(1.0, n - start)
        kept += decide(c, b, higher_is_better=True).value != "inconclusive"
    return undecided, printed, kept


def promise_table(trials: int) -> None:
    # The module, not the function volbench.stats re-exports under the same name.
    comparison = sys.modules["volbench.stats.compare"]
    old = old_module("stats/power.py", "power_old")
    print(f"| CV | true ratio | from | old (80 % bound, 95 % gate): printed, kept | new (99 % "
          f"bound and gate): printed, kept |  ({trials} experiments a cell, cap 1000)")
    print("|---|---|---|---|---|")
    for cv in (0.05, 0.10, 0.20, 0.30):
        for ratio in (1.0, 1.05):
            for start in (3, 5):
                cells = []
                for runs_to_decide in (old.runs_to_decide, power.runs_to_decide):
                    comparison.runs_to_decide = runs_to_decide
                    u, p, k = promise_cell(cv, ratio, start, trials,
                                           36_000 + int(cv * 100) * 10 + start)
                    cells.append(f"{p} of {u} undecided, kept {wilson(k, p)}")
                comparison.runs_to_decide = power.runs_to_decide
                print(f"| {cv:.0%} | {ratio:g} | {start} | {cells[0]} | {cells[1]} |",
                      flush=True)


def promise_hard_table(trials: int) -> None:
    """The number on run-to-run noise that is not lognormal. t3: the method without the
    activity records; busy: the same series with the records (bench/busysim.py), old
    (records not read) beside new (no number where a run had company), for a busy host
    that shows in every run's record and for company only in the slowed runs."""
    print(f"| runs | CV | true ratio | from | printed, kept |  ({trials} experiments a cell)")
    print("|---|---|---|---|---|")
    for cv in (0.05, 0.10):
        for ratio in (1.0, 1.05):
            for start in (3, 5, 10):
                u, p, k = promise_cell(cv, ratio, start, trials,
                                       37_000 + int(cv * 100) * 10 + start, "t3")
                print(f"| t3 | {cv:.0%} | {ratio:g} | {start} | {p} of {u} "
                      f"undecided, kept {wilson(k, p)} |", flush=True)
    print()
    print(f"| busy host | CV | true ratio | from | undecided | old (records not read): "
          f"printed, kept | new, company in every run | new, company in the slowed runs "
          f"only |  ({trials} experiments a cell)")
    print("|---|---|---|---|---|---|---|---|")
    for cv in (0.02, 0.05):
        for ratio in (1.0, 1.05):
            for start in (3, 5, 10):
                seed = 37_000 + int(cv * 100) * 10 + start
                every, slowed = (promise_trials(seed=seed, trials=trials, cv=cv, ratio=ratio,
                                                start=start, model=model)
                                 for model in MODELS)
                assert (every.old_printed, every.old_kept) == (slowed.old_printed,
                                                               slowed.old_kept)
                print(f"| busy | {cv:.0%} | {ratio:g} | {start} | {every.undecided} | "
                      f"{every.old_printed}, kept {wilson(every.old_kept, every.old_printed)}"
                      f" | {every.new_printed}, kept "
                      f"{wilson(every.new_kept, every.new_printed)} | {slowed.new_printed}, "
                      f"kept {wilson(slowed.new_kept, slowed.new_printed)} |", flush=True)


# -- intervals of non-negative quantities -----------------------------------------------------

def intervals_table() -> None:
    summary = old_module("stats/summary.py", "summary_old")
    ratio = old_module("stats/meanratio.py", "meanratio_old")
    comparing = old_module("stats/compare.py", "compare_old")
    print("| figure | runs | old | new |")
    print("|---|---|---|---|")
    runs = [994.0, 1009.0, 0.0]
    for name, old_ci, new_ci in (("mean's 95 % interval (tps)", summary.mean_interval(runs),
                                  mean_interval(runs)),):
        print(f"| {name} | {runs} | [{old_ci.low:,.0f}, {old_ci.high:,.0f}] "
              f"| [{new_ci.low:,.0f}, {new_ci.high:,.0f}] |")
    base = [1000.0, 1001.0, 999.0]
    changes = []
    for run in (comparing.compare, compare):
        ci = run(runs, base, higher_is_better=True).ratio_ci
        changes.append(f"{(ci.low - 1) * 100:+.1f} % to {(ci.high - 1) * 100:+.1f} %")
    print(f"| verdict interval as a change | {runs} vs {base} | {changes[0]} | {changes[1]} |")
    for c, b in (([50.0, 100.0, 700.0], [100.0, 102.0, 98.0]),
                 ([100.0, 101.0, 99.0, 98.0, 1000.0], [30.0, 40.0, 20.0, 60.0, 25.0])):
        was, now = ratio.mean_ratio(c, b), mean_ratio(c, b)
        text = [("unbounded" if m is None or m.interval is None else
                 f"{(m.ratio - 1) * 100:+.1f} % [{(m.interval.low - 1) * 100:+.1f}, "
                 f"{(m.interval.high - 1) * 100:+.1f}]") for m in (was, now)]
        print(f"| arithmetic means (Fieller) | {c} vs {b} | {text[0]} | {text[1]} |")


# -- through the CLI: imported pgbench -P 1 runs ---------------------------------------------

PGBENCH_HEAD = "pgbench (16.2)\nstarting vacuum...end.\n"


def pgbench_output(tps: list[float], clients: int = 4) -> str:
    """A pgbench 16 run's output with -P 1 progress lines (as pgbench prints them)."""
    lines = [PGBENCH_HEAD.rstrip("\n")]
    for t, rate in enumerate(tps, 1):
        lat = clients / rate * 1000 if rate > 0 else 0.0
        lines.append(f"progress: {t}.0 s, {rate:.1f} tps, lat {lat:.3f} ms stddev 0.300, "
                     "0 failed")
    total = int(sum(tps))
    mean = total / len(tps)
    lines += ["transaction type: <builtin: TPC-B (sort of)>", "scaling factor: 2",
              "query mode: simple", f"number of clients: {clients}", "number of threads: 2",
              "maximum number of tries: 1", f"duration: {len(tps)} s",
              f"number of transactions actually processed: {total}",
              "number of failed transactions: 0 (0.000%)",
              *([f"latency average = {clients / mean * 1000:.3f} ms",
                 "latency stddev = 0.300 ms"] if total else []),
              "initial connection time = 8.961 ms",
              f"tps = {mean:.6f} (without initial connection time)"]
    return "\n".join(lines) + "\n"


def cli_stories(src: Path, work: Path, cases: int, seconds: int) -> int:
    """Cases told a burst or warm-up story by `volbench report` of `src`'s code."""
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    db = work / "r.db"
    rng = random.Random(32)
    for c in range(cases):
        files = []
        for rep in range(3):
            path = work / f"t{c:03d}-{rep}.txt"
            path.write_text(pgbench_output(series(rng, [1000.0] * seconds, Noise(0.15, 0.9))))
            files.append(str(path))
        subprocess.run([sys.executable, "-m", "volbench.cli.main", "import", "--tool",
                        "pgbench", "--target", f"t{c:03d}", "--db", str(db), *files],
                       check=True, capture_output=True, env=env, timeout=300)
    done = subprocess.run([sys.executable, "-m", "volbench.cli.main", "report", "--db", str(db),
                           "--experiment", "all", "--format", "json"], check=True,
                          capture_output=True, text=True, env=env, timeout=1800)
    lines = json.loads(done.stdout)["time"]
    return sum(1 for t in lines if ("bursty" in t["text"] or "warms up" in t["text"])
               and "agree on" not in t["text"])


def cli_table(cases: int) -> None:
    print(f"| runs | old: cases told a story | new |  ({cases} cases of 3 imported pgbench -P 1 "
          "runs, AR(1) 0.9, CV 15 %)")
    print("|---|---|---|")
    for seconds in (30, 60):
        counts = []
        with tempfile.TemporaryDirectory() as tmp:
            old_src = Path(tmp) / "old"
            old_src.mkdir()
            archive = subprocess.run(["git", "archive", OLD, "src"], cwd=ROOT, check=True,
                                     capture_output=True, timeout=60).stdout
            subprocess.run(["tar", "-x", "-C", str(old_src)], input=archive, check=True,
                           timeout=60)
            for src in (old_src / "src", ROOT / "src"):
                work = Path(tempfile.mkdtemp(dir=tmp))
                counts.append(cli_stories(src, work, cases, seconds))
        print(f"| {seconds} s | {wilson(counts[0], cases)} | {wilson(counts[1], cases)} |",
              flush=True)


# -- outside the calibration: stalls at the run's ends, heavy tails, a busy host ------------

HARD: tuple[tuple[str, Noise, bool], ...] = (
    ("normal, AR 0.9, cv 15 %, stalls in the first and last 1-3 s", Noise(0.15, 0.9), True),
    (Noise(0.15, 0.9, stalls=2).label, Noise(0.15, 0.9, stalls=2), False),
    (Noise(0.15, 0.9, heavy=True).label, Noise(0.15, 0.9, heavy=True), False),
    (Noise(0.10, 0.9, busy=0.1).label, Noise(0.10, 0.9, busy=0.1), False),
    (Noise(0.15, 0.9, busy=0.1).label, Noise(0.15, 0.9, busy=0.1), False),
    (Noise(0.10, 0.5, busy=0.1).label, Noise(0.10, 0.5, busy=0.1), False))


def hard_run(pipe: Pipeline, rng: random.Random, seconds: int, noise: Noise, ends: bool,
             rep: int) -> RunResult:
    values = series(rng, [500.0] * seconds, noise)
    return pipe.run(ends_stalled(rng, values) if ends else values, rep)


def hard_table(trials: int) -> None:
    """Flat cases on the noise the critical values were not calibrated on: one run (the
    detector's own rate) and three (the case gate), old beside new."""
    old, new = Pipeline(True), Pipeline(False)
    print(f"| run | noise | runs a case | story on a flat case: old | new |  ({trials} "
          "cases a cell; 300 s: a fifth of them)")
    print("|---|---|---|---|---|")
    for label, noise, ends in HARD:
        for seconds in (30, 60, 300):
            cases = trials if seconds < 300 else max(trials // 5, 1)
            for runs in (1, 3):
                counts = []
                for pipe in (old, new):
                    rng = random.Random(34_000 + seconds * 10 + runs)
                    counts.append(sum(bool(pipe.agreed([
                        hard_run(pipe, rng, seconds, noise, ends, i) for i in range(runs)]))
                        for _ in range(cases)))
                print(f"| {seconds} s | {label} | {runs} | {wilson(counts[0], cases)} "
                      f"| {wilson(counts[1], cases)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("case", "case-true", "run", "hard", "burst", "steady", "promise",
                 "promise-hard", "steady-hard", "intervals", "cli"):
        ap.add_argument(f"--{name}", action="store_true")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--cases", type=int, default=200)
    args = ap.parse_args()
    if args.case:
        case_table(args.trials)
    if args.case_true:
        case_true_table(args.trials)
    if args.run:
        run_table(args.trials)
    if args.hard:
        hard_table(args.trials)
    if args.burst:
        burst_table(args.trials)
    if args.steady:
        steady_table(args.trials)
    if args.promise:
        promise_table(args.trials)
    if args.steady_hard:
        steady_table(args.trials, STEADY_HARD)
    if args.promise_hard:
        promise_hard_table(args.trials)
    if args.intervals:
        intervals_table()
    if args.cli:
        cli_table(args.cases)


if __name__ == "__main__":
    main()
