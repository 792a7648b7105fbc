"""Seeded simulations of the error rates of volbench's statistical rules.

The CI tests (tests/test_calibration.py) run them small, bench/calibration.py runs them
large and prints the tables in docs/statistics.md. Noise is lognormal with a given
coefficient of variation (benchmark results are positive and right-skewed); a true ratio
multiplies the candidate's values, so it is the ratio of both the geometric and the
arithmetic means.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from volbench.stats.compare import Verdict, decide
from volbench.stats.sequential import SequentialDesign

Sampler = Callable[[int], list[float]]


def lognormal(rng: random.Random, cv: float, scale: float = 1.0) -> Sampler:
    """n values with median `scale` and coefficient of variation `cv`."""
    sigma = math.sqrt(math.log1p(cv * cv))
    return lambda n: [scale * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    runs: int  # runs per side when the comparison stopped


def sequential_trial(
    candidate: Sampler,
    baseline: Sampler,
    *,
    first: int,
    last: int,
    design: SequentialDesign | None,
    threshold: float = 0.02,
    alpha: float = 0.05,
) -> Outcome:
    """One adaptive experiment: a round at a time from `first` to `last` runs per side,
    stopping at the first decided verdict (design None: every look at alpha, the old rule;
    first == last: a fixed design)."""
    c, b = candidate(first), baseline(first)
    while True:
        verdict = decide(
            c, b, higher_is_better=True, threshold=threshold, alpha=alpha, design=design
        )
        if verdict is not Verdict.INCONCLUSIVE or len(c) >= last:
            return Outcome(verdict, len(c))
        c += candidate(1)
        b += baseline(1)


@dataclass(frozen=True)
class Rates:
    """Shares of verdicts over `trials` simulated experiments, and the mean runs per side."""

    trials: int
    verdicts: Counter[Verdict]
    mean_runs: float

    def share(self, *verdicts: Verdict) -> float:
        return sum(self.verdicts[v] for v in verdicts) / self.trials

    @property
    def different(self) -> float:
        return self.share(Verdict.BETTER, Verdict.WORSE)


def verdict_rates(
    *,
    seed: int,
    trials: int,
    cv: float,
    ratio: float,
    first: int,
    last: int,
    design: SequentialDesign | None,
    threshold: float = 0.02,
) -> Rates:
    """Verdict shares of `sequential_trial` for a true ratio at a given noise level."""
    rng = random.Random(seed)
    candidate = lognormal(rng, cv, ratio)
    baseline = lognormal(rng, cv)
    counts: Counter[Verdict] = Counter()
    runs = 0
    for _ in range(trials):
        outcome = sequential_trial(
            candidate, baseline, first=first, last=last, design=design, threshold=threshold
        )
        counts[outcome.verdict] += 1
        runs += outcome.runs
    return Rates(trials, counts, runs / trials)
