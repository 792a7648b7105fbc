"""Seeded coverage of the summary intervals (mean and median) on positive, skewed runs.

Used by tests/unit/test_intervals.py (small) and bench/calibration.py --only intervals
(the table in docs/statistics.md). Families of run-to-run noise around a level of 1:
lognormal and normal (clipped at a tiny positive value) at a given CV, and "stall": a
lognormal run that is cut to a third of its level one time in ten (a busy host).
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from volbench.stats.distributions import t_quantile
from volbench.stats.summary import mean_interval, median_interval

KINDS = ("lognormal", "normal", "stall")


@dataclass(frozen=True)
class Coverage:
    """Shares of samples whose interval covered the truth, and went below zero."""

    trials: int
    mean_new: float
    mean_old: float
    mean_old_negative: float
    mean_new_negative: float
    median: float | None  # None when the summary gives no median interval at this n


def draw(kind: str, cv: float, rng: random.Random) -> float:
    """One run's value around a level of 1 (see the module docstring)."""
    sigma = math.sqrt(math.log1p(cv * cv))
    if kind == "lognormal":
        return math.exp(rng.gauss(0.0, sigma))
    if kind == "normal":
        return max(1e-9, rng.gauss(1.0, cv))
    if kind == "stall":
        return math.exp(rng.gauss(0.0, sigma)) * (1 / 3 if rng.random() < 0.1 else 1.0)
    raise ValueError(f"noise kind {kind!r}: one of {', '.join(KINDS)}")


def truth(kind: str, cv: float) -> tuple[float, float]:
    """The population mean and median, in closed form."""
    sigma = math.sqrt(math.log1p(cv * cv))
    if kind == "lognormal":
        return math.exp(sigma * sigma / 2.0), 1.0
    if kind == "normal":
        return 1.0, 1.0
    # stall: mean of the mixture; median solves 0.9·Phi(ln m/s) + 0.1·Phi(ln 3m/s) = 1/2
    mean = math.exp(sigma * sigma / 2.0) * (0.9 + 0.1 / 3.0)
    low, high = 0.01, 10.0
    dist = statistics.NormalDist(0.0, sigma)
    for _ in range(100):
        mid = math.sqrt(low * high)
        share = 0.9 * dist.cdf(math.log(mid)) + 0.1 * dist.cdf(math.log(3.0 * mid))
        low, high = (mid, high) if share < 0.5 else (low, mid)
    return mean, math.sqrt(low * high)


def coverage(kind: str, cv: float, n: int, *, trials: int, seed: int = 21) -> Coverage:
    """Coverage of 95 % intervals of n runs: the summary's (new) and Student's t (old)."""
    rng = random.Random(f"{seed}:{kind}:{cv}:{n}")
    mean, median = truth(kind, cv)
    new = old = old_negative = new_negative = covered = 0
    has_median = True
    t = t_quantile(0.975, n - 1)
    for _ in range(trials):
        sample = [draw(kind, cv, rng) for _ in range(n)]
        ci = mean_interval(sample)
        assert ci is not None
        new += ci.low <= mean <= ci.high
        new_negative += ci.low < 0.0
        half = t * statistics.stdev(sample) / math.sqrt(n)
        centre = statistics.fmean(sample)
        old += centre - half <= mean <= centre + half
        old_negative += centre - half < 0.0
        mci = median_interval(sample)
        has_median = has_median and mci is not None
        covered += mci is not None and mci.low <= median <= mci.high
    return Coverage(trials, new / trials, old / trials, old_negative / trials,
                    new_negative / trials, covered / trials if has_median else None)
