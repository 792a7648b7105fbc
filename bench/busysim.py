"""The "N more runs" promise on a busy host, through the report's own verdict code (seeded).

Noise (bench/claims.py --promise-hard's "busy", bench/answer_coverage.py's): each run is
lognormal at the CV, and 20 % of runs are slowed to 40-90 % by other work on the machine.
Each run carries the activity record the runner stores (system/host/activity.py), which
report/noise.py reads. Two honest models of that record:

  every    a busy host shows company in every run (its load average stays above the
           CPUs whether or not the other work happened to slow this run)
  slowed   only the slowed runs show company; the others look quiet (the harder case:
           other work that comes and goes, and a first few runs that caught none of it)

A trial starts with `start` runs a side of identical targets (or a true ratio), judges them
with report.verdicts.against_baseline (the path `volbench report` takes) and, where the
undecided verdict prints a number of runs, draws up to that number a side and asks whether
the comparison is then decided. "old" counts the numbers the comparison would print
without reading the records (every undecided verdict within the cap), "new" the numbers
the report prints now; both on the same series.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.report.cases import summarize_runs
from volbench.report.verdicts import against_baseline
from volbench.stats import Comparison, Verdict, decide

SLOWED_SHARE = 0.2
SLOWED = (0.4, 0.9)
QUIET = {"seconds": 60.0, "cpus": 2, "other_cpus": 0.1, "steal_cpus": 0.0,
         "load1_start": 0.3, "load1_end": 0.4}
COMPANY = {**QUIET, "other_cpus": 1.3, "load1_start": 3.1, "load1_end": 3.0}
MODELS = ("every", "slowed")


def busy_run(rng: random.Random, sigma: float) -> tuple[float, bool]:
    """One run's factor on a busy host and whether other work slowed it (the draws in
    bench/claims.py run_noise's order, so the same seed gives the same series)."""
    factor = math.exp(rng.gauss(-sigma * sigma / 2, sigma))
    if rng.random() < SLOWED_SHARE:
        return factor * rng.uniform(*SLOWED), True
    return factor, False


def _runs(target: str, scale: float, drawn: list[tuple[float, bool]], model: str
          ) -> list[RunResult]:
    out = []
    for rep, (factor, slowed) in enumerate(drawn, 1):
        record = COMPANY if model == "every" or slowed else QUIET
        parsed = Parsed((Metric("iops", 1000.0 * scale * factor, "op/s", {"op": "read"}),))
        out.append(RunResult(target, "w", {"bs": "4k"}, rep, Status.OK, 100.0 * rep,
                             100.0 * rep + 60.0, parsed=parsed,
                             annotations={"activity": record}))
    return out


def first_look(candidate: list[tuple[float, bool]], baseline: list[tuple[float, bool]],
               ratio: float, model: str) -> Comparison:
    """The report's comparison of the first runs (candidate "b" against baseline "a")."""
    runs = _runs("a", 1.0, baseline, model) + _runs("b", ratio, candidate, model)
    rows = against_baseline(summarize_runs(runs), "a", {})
    found = rows[0].comparison
    assert found is not None
    return found


@dataclass
class Promise:
    """Undecided first looks, and the numbers old and new printed and kept."""

    undecided: int = 0
    old_printed: int = 0
    old_kept: int = 0
    new_printed: int = 0
    new_kept: int = 0


def promise_trials(*, seed: int, trials: int, cv: float, ratio: float, start: int,
                   model: str) -> Promise:
    rng = random.Random(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    found = Promise()
    for _ in range(trials):
        c = [busy_run(rng, sigma) for _ in range(start)]
        b = [busy_run(rng, sigma) for _ in range(start)]
        first = first_look(c, b, ratio, model)
        if first.verdict is not Verdict.INCONCLUSIVE:
            continue
        found.undecided += 1
        if first.runs_needed_capped or first.runs_needed is None:
            continue
        n = first.runs_needed
        c += [busy_run(rng, sigma) for _ in range(n - start)]
        b += [busy_run(rng, sigma) for _ in range(n - start)]
        kept = decide([ratio * f for f, _ in c], [f for f, _ in b],
                      higher_is_better=True) is not Verdict.INCONCLUSIVE
        found.old_printed += 1
        found.old_kept += kept
        if first.promises_runs:
            found.new_printed += 1
            found.new_kept += kept
    return found
