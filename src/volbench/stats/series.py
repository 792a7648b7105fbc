"""Behaviour over time: drift across repetitions and stalls within one run."""

from __future__ import annotations

import functools
import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.ranks import spearman
from volbench.stats.validation import StatisticsInputError, check_probability, finite_sample


@dataclass(frozen=True)
class Drift:
    """Trend of a metric over repetitions in run order.

    `rho` is Spearman's rank correlation of value with run index and `p_value` its
    two-sided p; `change` is (mean of the second half - mean of the first half) / |mean of
    the first half| (None when that mean is 0), the middle run left out when n is odd.
    `flagged` is p_value < alpha and |change| > threshold. `testable` is False when even
    a perfectly monotone series of these values could not reach p < alpha (3 runs: the
    smallest exact p is 1/3; 4 runs: 1/12): then "not flagged" means "not tested".
    Identical values are testable: nothing drifted.
    """

    n: int
    rho: float
    p_value: float
    change: float | None
    flagged: bool
    testable: bool = True
    # The smallest p-value any order of these values could give.
    smallest_p: float = 0.0


def drift(
    values_in_run_order: Sequence[float], *, alpha: float = 0.05, threshold: float = 0.02
) -> Drift:
    """Detect a monotone trend across repetitions (warming caches, filling SSDs, throttling).

    Spearman's rho against the run index is a rank version of a trend test: it catches
    any monotone drift, not only a linear one, and a single wild run cannot fake it.
    The half-vs-half change keeps statistically detectable but negligible trends from
    being flagged. With fewer than 2 values nothing can trend: rho 0, p 1, change None.
    """
    sample = finite_sample(values_in_run_order)
    check_probability(alpha, "alpha", high=0.5)
    if not threshold >= 0.0:
        raise StatisticsInputError(f"drift threshold must be >= 0, got {threshold!r}")
    n = len(sample)
    correlation = spearman([float(i) for i in range(n)], sample)
    change: float | None = None
    if n >= 2:
        first = statistics.fmean(sample[: n // 2])
        second = statistics.fmean(sample[(n + 1) // 2 :])
        change = (second - first) / abs(first) if first != 0.0 else None
    flagged = correlation.p_value < alpha and change is not None and abs(change) > threshold
    smallest = smallest_drift_p(sample)
    # Identical values cannot have drifted: that is known without a test.
    testable = smallest < alpha or len(set(sample)) == 1
    return Drift(n, correlation.rho, correlation.p_value, change, flagged, testable, smallest)


def smallest_drift_p(values: Sequence[float]) -> float:
    """The p-value of the most extreme order of these values (sorted): no series of them
    can show a trend more significant than this."""
    distinct = len(set(values))
    if len(values) < 2 or distinct == 1:
        return 1.0
    if distinct == len(values):  # untied: the ranks are 1..n whatever the values
        return _smallest_untied_p(len(values))
    return spearman([float(i) for i in range(len(values))], sorted(values)).p_value


@functools.lru_cache(maxsize=1024)
def _smallest_untied_p(n: int) -> float:
    # A report asks this for every case (4 000 cases of 100 runs: 2 s of spearman).
    order = [float(i) for i in range(n)]
    return spearman(order, order).p_value


def fill_rate_gaps(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """A rate series with every missing report period filled in as a zero-rate one.

    Progress reports come at a fixed period (the median spacing of `points`); a tool that
    reports only when work completed (fio's averaged logs) or whose report line could not
    be read (pgbench's "lat NaN" for a second without transactions) leaves periods out,
    and a period without completions has rate 0. Spacings up to 1.5 periods are jitter.
    """
    if len(points) < 3:
        return list(points)
    spacing = statistics.median(b[0] - a[0] for a, b in itertools.pairwise(points))
    if spacing <= 0:
        return list(points)
    out = [points[0]]
    for previous, point in itertools.pairwise(points):
        missing = round((point[0] - previous[0]) / spacing) - 1
        if point[0] - previous[0] > 1.5 * spacing:
            out.extend((previous[0] + spacing * (k + 1), 0.0) for k in range(missing))
        out.append(point)
    return out


@dataclass(frozen=True)
class Stall:
    """A stretch [start, end] (seconds) where the rate stayed below the stall level."""

    start: float
    end: float
    min_rate: float

    @property
    def duration(self) -> float:
        """The stall's length in seconds (end - start)."""
        return self.end - self.start


def _check_series(times: list[float], rates: list[float]) -> None:
    if len(times) != len(rates):
        raise StatisticsInputError(
            f"times and rates must pair up, got {len(times)} times and {len(rates)} rates"
        )
    for index in range(1, len(times)):
        if not times[index] > times[index - 1]:
            raise StatisticsInputError(
                f"times must increase strictly; times[{index}] = {times[index]} follows "
                f"{times[index - 1]}; sort the samples or drop duplicates first"
            )


def _period_start(times: list[float], index: int) -> float:
    """Start of the period that sample `index` covers (it ends at times[index])."""
    if index > 0:
        return times[index - 1]
    return times[0] - (times[1] - times[0]) if len(times) > 1 else times[0]


def stalls(
    times: Sequence[float],
    rates: Sequence[float],
    *,
    fraction: float = 0.1,
    min_seconds: float = 1.0,
) -> list[Stall]:
    """Stretches where the rate stays below `fraction` times the series median.

    Each sample is taken to cover the interval that ends at its timestamp, since the
    previous sample (fio's averaged bandwidth/IOPS logs and pgbench --progress both report
    the rate over the period just ended). A stall over samples i..j therefore starts at
    times[i-1] (for the first sample: times[0] minus the first spacing, or times[0] for a
    single sample) and ends at times[j]; it is kept when end - start >= min_seconds.
    A series whose median is 0 (mostly idle) has no stall level and yields none.
    """
    t = finite_sample(times, "times")
    r = finite_sample(rates, "rates")
    _check_series(t, r)
    check_probability(fraction, "fraction")
    if not min_seconds >= 0.0:
        raise StatisticsInputError(f"min_seconds must be >= 0, got {min_seconds!r}")
    level = fraction * statistics.median(r)
    found: list[Stall] = []
    index = 0
    while index < len(r):
        if not r[index] < level:
            index += 1
            continue
        last = index
        while last + 1 < len(r) and r[last + 1] < level:
            last += 1
        start = _period_start(t, index)
        # A relative tolerance keeps 0.7 - 0.4 = 0.29999999999999993 from missing 0.3 s.
        if t[last] - start >= min_seconds * (1.0 - 1e-9):
            found.append(Stall(start, t[last], min(r[index : last + 1])))
        index = last + 1
    return found
