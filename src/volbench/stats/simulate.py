"""Seeded simulations of the error rates of volbench's statistical rules.

The CI tests (tests/unit/test_calibration.py) run them small, bench/calibration.py runs them
large and prints the tables in docs/statistics.md. Noise is lognormal with a given
coefficient of variation (benchmark results are positive and right-skewed); a true ratio
multiplies the candidate's values, so it is the ratio of both the geometric and the
arithmetic means.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from volbench.stats.compare import Verdict, compare, decide
from volbench.stats.distributions import t_quantile
from volbench.stats.sequential import SequentialDesign

Sampler = Callable[[int], list[float]]


def lognormal(rng: random.Random, cv: float, scale: float = 1.0) -> Sampler:
    """n values with median `scale` and coefficient of variation `cv`."""
    sigma = math.sqrt(math.log1p(cv * cv))
    return lambda n: [scale * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


@dataclass(frozen=True)
class Outcome:
    """One simulated adaptive experiment: the verdict it stopped at and its runs per side."""

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
        """The fraction of trials (0 to 1) that ended in any of `verdicts`."""
        return sum(self.verdicts[v] for v in verdicts) / self.trials

    @property
    def different(self) -> float:
        """The fraction of trials that declared a difference (better or worse)."""
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


def old_runs_needed(candidate: list[float], baseline: list[float], *, threshold: float,
                    alpha: float = 0.05, cap: int = 1000) -> int | None:
    """The estimate volbench gave before issue 13, for the side-by-side tables: the
    observed log-difference and spreads projected to n runs per side, smallest n that
    would decide (None: not even `cap`)."""
    logs_c = [math.log(v) for v in candidate]
    logs_b = [math.log(v) for v in baseline]
    difference = statistics.fmean(logs_c) - statistics.fmean(logs_b)
    var_c, var_b = statistics.variance(logs_c), statistics.variance(logs_b)
    band = (math.log1p(-threshold), math.log1p(threshold))

    def decides(n: int) -> bool:
        se = math.sqrt((var_c + var_b) / n)
        if se == 0.0:
            return True
        df = (n - 1) * (var_c + var_b) ** 2 / (var_c * var_c + var_b * var_b)
        half = t_quantile(1.0 - alpha, df) * se
        if band[0] < difference - half and difference + half < band[1]:
            return True
        return abs(difference) > t_quantile(1.0 - alpha / 2.0, df) * se

    if not decides(cap):
        return None
    low, high = 1, cap
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class Promise:
    """How often "N runs per side would decide" came true when the runs were made."""

    cases: int  # experiments that were inconclusive with a promise within the cap
    kept: int  # of those, decided at the promised n
    mean_promised: float

    @property
    def rate(self) -> float:
        """The fraction of promises kept; NaN when no case made a promise."""
        return self.kept / self.cases if self.cases else math.nan


def promise_rates(*, seed: int, trials: int, cv: float, ratio: float, start: int,
                  old: bool, threshold: float = 0.02, cap: int = 300) -> Promise:
    """Start with `start` runs per side; when inconclusive, run up to the promised n
    (new: compare().runs_needed, the upper end of its range; old: `old_runs_needed`)
    and see whether a fixed-design comparison at that n decides."""
    rng = random.Random(seed)
    candidate, baseline = lognormal(rng, cv, ratio), lognormal(rng, cv)
    cases = kept = promised_total = 0
    for _ in range(trials):
        c, b = candidate(start), baseline(start)
        first = compare(c, b, higher_is_better=True, threshold=threshold, max_runs=cap)
        if first.verdict is not Verdict.INCONCLUSIVE:
            continue
        promised = (old_runs_needed(c, b, threshold=threshold, cap=cap) if old
                    else None if first.runs_needed_capped else first.runs_needed)
        if promised is None or promised <= start:
            continue
        c += candidate(promised - start)
        b += baseline(promised - start)
        cases += 1
        promised_total += promised
        kept += decide(c, b, higher_is_better=True, threshold=threshold) \
            is not Verdict.INCONCLUSIVE
    return Promise(cases, kept, promised_total / cases if cases else math.nan)


def paired_verdict(candidate: list[float], baseline: list[float], *, threshold: float = 0.02,
                   alpha: float = 0.05) -> Verdict:
    """The verdict rules on per-round log-ratios (one-sample t, n - 1 df): the paired
    analysis the report does not use (docs/statistics.md says why), for the tables."""
    d = [math.log(c / b) for c, b in zip(candidate, baseline, strict=True)]
    n = len(d)
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(n)
    band = (math.log1p(-threshold), math.log1p(threshold))
    if se == 0.0:
        return Verdict.EQUIVALENT if band[0] < mean < band[1] else (
            Verdict.BETTER if mean > 0 else Verdict.WORSE)
    h_eq = t_quantile(1.0 - alpha, n - 1) * se
    if band[0] < mean - h_eq and mean + h_eq < band[1]:
        return Verdict.EQUIVALENT
    if abs(mean) > t_quantile(1.0 - alpha / 2.0, n - 1) * se:
        return Verdict.BETTER if mean > 0 else Verdict.WORSE
    return Verdict.INCONCLUSIVE


def paired_rates(*, seed: int, trials: int, n: int, ratio: float, noise: float,
                 drift: float) -> tuple[Rates, Rates]:
    """(independent Welch, paired) verdict shares for n interleaved rounds. Each run is
    exp(round level + own noise); the round level is a random walk with steps of
    `drift` (the machine's slow state, shared by both targets' runs of a round), the
    own noise lognormal with sigma `noise`; drift 0 is iid noise."""
    rng = random.Random(seed)
    welch: Counter[Verdict] = Counter()
    paired: Counter[Verdict] = Counter()
    for _ in range(trials):
        level, c, b = 0.0, [], []
        for _ in range(n):
            level += rng.gauss(0.0, drift)
            c.append(ratio * math.exp(level + rng.gauss(0.0, noise)))
            b.append(math.exp(level + rng.gauss(0.0, noise)))
        welch[decide(c, b, higher_is_better=True)] += 1
        paired[paired_verdict(c, b)] += 1
    return Rates(trials, welch, float(n)), Rates(trials, paired, float(n))
