"""Identical targets through the report's own verdict code (seeded): how often does a
table of 2-8 targets × 1-3 workloads call any headline "faster/slower"?

Each simulated experiment is a list of RunResults as the runner stores them (fio-like
random-read cases with iops, bw = iops × 4 KiB and lat_mean), summarised by
report.cases.summarize_runs and judged by report.verdicts.against_baseline, the path
`volbench report` takes. "old" reads the same comparisons at a plain 5 % each (the rule
before the family); "new" is the report's verdict (Holm over the headline family).

Noise of a run's level around the true one (all targets identical):
  lognormal  iid, CV as given
  heavy      log-t with 3 degrees of freedom (heavy tails), scaled to the CV
  busy       a machine state shared by the runs of one interleaved round (AR(1) across
             rounds, phi 0.9) plus a stalled run (a third of the level) in 1 of 10
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from unittest import mock

from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.report.cases import summarize_runs
from volbench.report.verdicts import against_baseline
from volbench.stats import Verdict
from volbench.stats.power import RunsRange

CALLED = (Verdict.BETTER, Verdict.WORSE)


@dataclass(frozen=True)
class FamilyRates:
    """Shares of experiments with at least one headline "faster/slower"."""

    trials: int
    old: int
    new: int

    def share(self, count: int) -> float:
        return count / self.trials


def _noise(kind: str, cv: float, rng: random.Random) -> Callable[[int, float], float]:
    """A factor per (round, state) for one target's runs; state is the shared round state."""
    sigma = math.sqrt(math.log1p(cv * cv))
    if kind == "lognormal":
        return lambda _round, _state: math.exp(rng.gauss(0.0, sigma))
    if kind == "heavy":
        def heavy(_round: int, _state: float) -> float:
            chi = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3))
            return math.exp(sigma * rng.gauss(0.0, 1.0) / math.sqrt(chi / 3.0) / math.sqrt(3.0))
        return heavy
    if kind == "busy":
        def busy(_round: int, state: float) -> float:
            stall = 1.0 / 3.0 if rng.random() < 0.1 else 1.0
            return stall * math.exp(state + rng.gauss(0.0, sigma * 0.6))
        return busy
    raise ValueError(f"noise kind {kind!r}: lognormal, heavy or busy")


def experiment(targets: int, workloads: int, runs: int, kind: str, cv: float,
               rng: random.Random) -> list[RunResult]:
    """Runs of identical targets t0..t{targets-1}, interleaved round by round."""
    factor = _noise(kind, cv, rng)
    sigma = math.sqrt(math.log1p(cv * cv))
    out: list[RunResult] = []
    state, clock = 0.0, 0.0
    for rep in range(1, runs + 1):
        # The shared state: AR(1) across rounds, phi 0.9, stationary sd 0.8·sigma.
        state = 0.9 * state + rng.gauss(0.0, 0.8 * sigma * math.sqrt(1 - 0.81))
        for w in range(workloads):
            for t in range(targets):
                iops = 5000.0 * factor(rep, state if kind == "busy" else 0.0)
                tags = {"op": "read"}
                metrics = (Metric("iops", iops, "op/s", tags),
                           Metric("bw", iops * 4096.0, "B/s", tags),
                           Metric("lat_mean", 1e9 / iops * factor(rep, 0.0) ** 0.2, "ns", tags))
                out.append(RunResult(f"t{t}", f"w{w}", {"bs": "4k", "rw": "randread"}, rep,
                                     Status.OK, clock, clock + 1.0,
                                     parsed=Parsed(metrics, (), ())))
                clock += 2.0
    return out


@contextlib.contextmanager
def without_runs_advice() -> Iterator[None]:
    """The runs-needed search is advice for undecided rows (90 % of the simulation's
    time) and changes no verdict: the simulation skips it."""
    # volbench.stats re-exports compare() under the module's own name: take the module.
    with mock.patch.object(sys.modules["volbench.stats.compare"], "_runs_range",
                           lambda *args, **kwargs: RunsRange(None, None)):
        yield


def family_rates(targets: int, workloads: int, trials: int, *, runs: int = 5,
                 kind: str = "lognormal", cv: float = 0.05, seed: int = 21) -> FamilyRates:
    """Seeded share of experiments of identical targets with any headline call."""
    rng = random.Random(seed * 1000 + targets * 10 + workloads)
    old = new = 0
    with without_runs_advice():
        for _ in range(trials):
            runs_ = experiment(targets, workloads, runs, kind, cv, rng)
            rows = against_baseline(summarize_runs(runs_), "t0", {})
            heads = [r.comparison for r in rows if r.is_verdict and r.comparison]
            new += any(c.verdict in CALLED for c in heads)
            # The rule before the family: each headline comparison at a plain 5 %
            # (significant and not inside the threshold, as compare() orders them).
            old += any(c.p_value is not None and c.p_value < 0.05
                       and not _inside(c.equivalence_ci, c.threshold) for c in heads)
    return FamilyRates(trials, old, new)


def _inside(ci: object, threshold: float) -> bool:
    low, high = getattr(ci, "low", 0.0), getattr(ci, "high", 2.0)
    return bool(1 - threshold < low and high < 1 + threshold)
