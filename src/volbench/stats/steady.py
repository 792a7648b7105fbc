"""Steady state over rounds: the SNIA Solid State Storage Performance Test Specification rule.

SNIA PTS (Enterprise / Client, v2.0, section "Steady State") measures a device only once a
*measurement window* of consecutive rounds (5 by default) holds, for the tracked
variable y (e.g. 4k random write IOPS per round):

- range: max(y) - min(y) within the window is at most 20 % of the window's mean;
- slope: the best-fit (least-squares) line through the window's rounds changes by at
  most 10 % of the window's mean across the window, |slope| * (window - 1).

`steady_state` finds the first window that holds. Written here from the rule (a dozen
lines); nothing in the standard library or a light package does it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats import arnoise
from volbench.stats.validation import StatisticsInputError, finite_sample

WINDOW = 5
RANGE = 0.20
SLOPE = 0.10
# Within a run the range is judged on the means of this many consecutive parts of the
# window (SNIA's rounds are themselves means), not on raw seconds.
PARTS = 5
# A trend within a run counts when its 99 % interval excludes no trend and it moves the
# level by at least DRIFT_MIN across the window: a drift that the noise could not have
# made and that is large enough to matter.
DRIFT_MIN = 0.02
# Critical values by window length (seconds, value), from bench/changepoint_rates.py
# --calibrate-steady (seed 32, flat windows at AR(1) phi 0, 0.5 and 0.9, the upper 1 %
# point of each statistic, the largest of the three, rounded up to 0.05). A normal 2.576
# with the window's own phi estimate false-alarmed in 10-36 % of 5 s windows (issue 32):
# a few seconds say next to nothing about their own dependence.
DRIFT_TABLE: tuple[tuple[int, float], ...] = (
    (3, 41.6), (4, 10.25), (5, 5.5), (6, 4.3), (8, 3.75), (10, 3.2), (15, 2.95),
    (20, 2.85), (30, 2.7), (50, 2.3), (100, 2.1), (200, 2.05), (300, 2.1), (600, 2.25),
    (1800, 2.35), (3600, 2.45),
)
RANGE_TABLE: tuple[tuple[int, float], ...] = (
    (3, 18.4), (4, 5.5), (5, 3.5), (6, 2.7), (8, 2.75), (10, 2.65), (15, 3.05), (20, 3.2),
    (30, 3.25), (50, 3.15), (100, 3.15), (200, 3.45), (300, 3.65), (600, 3.95),
    (1800, 4.2), (3600, 4.3),
)


@dataclass(frozen=True)
class SteadyState:
    """Whether (and from which round) the rule held, and the last window's figures.

    `start` is the 0-based index of the window's first round (None when never steady);
    `range_share` and `slope_share` are the window's excursion and best-fit excursion as
    shares of its mean (of the steady window, or of the last window when never steady).
    """

    reached: bool
    start: int | None
    window: int
    range_share: float | None
    slope_share: float | None
    n: int

    @property
    def rounds(self) -> tuple[int, int] | None:
        """1-based first and last round of the steady window."""
        if self.start is None:
            return None
        return self.start + 1, self.start + self.window


def window_shares(window: Sequence[float]) -> tuple[float, float] | None:
    """(range, best-fit excursion) of one window as shares of its mean; None if the mean
    is 0."""
    return _shares(window)


def _shares(window: Sequence[float]) -> tuple[float, float] | None:
    mean = statistics.fmean(window)
    if mean == 0.0:
        return None
    fit = statistics.linear_regression(range(len(window)), window)
    spread = (max(window) - min(window)) / abs(mean)
    excursion = abs(fit.slope) * (len(window) - 1) / abs(mean)
    return spread, excursion


def steady_state(
    values_in_round_order: Sequence[float],
    *,
    window: int = WINDOW,
    range_limit: float = RANGE,
    slope_limit: float = SLOPE,
) -> SteadyState:
    """The first `window` consecutive rounds whose range and best-fit excursion stay within
    `range_limit` and `slope_limit` of their mean (SNIA PTS); fewer rounds: not reached."""
    values = finite_sample(values_in_round_order, "values") if values_in_round_order else []
    if window < 2:
        raise StatisticsInputError(f"a steady-state window needs at least 2 rounds, got {window}")
    for name, limit in (("range", range_limit), ("slope", slope_limit)):
        if not 0.0 < limit < 1.0:
            raise StatisticsInputError(f"the {name} limit must be between 0 and 1, got {limit!r}")
    last: tuple[float, float] | None = None
    for start in range(len(values) - window + 1):
        shares = _shares(values[start : start + window])
        if shares is None:
            continue  # a zero mean has no relative range
        last = shares
        if shares[0] <= range_limit and shares[1] <= slope_limit:
            return SteadyState(True, start, window, shares[0], shares[1], len(values))
    return SteadyState(False, None, window, last[0] if last else None,
                       last[1] if last else None, len(values))


@dataclass(frozen=True)
class LevelCheck:
    """One run's window judged on levels: the range of its PARTS part means and its
    least-squares excursion across the window (shares of the mean), the excursion's
    99 % interval under the seconds' AR(1) noise, whether it drifts (the interval
    excludes 0 and the excursion is DRIFT_MIN or more), and `noise_range`: the range of
    part means the noise alone reaches in 1 % of flat windows (a range within it is no
    evidence the level moved)."""

    range_share: float
    slope_share: float
    slope_low: float
    slope_high: float
    drifting: bool
    noise_range: float = 0.0
    # Standard errors (shares of the mean) of the excursion and of one part's mean: the
    # tests' units (bench/changepoint_rates.py --calibrate-steady reads them).
    excursion_error: float = 0.0
    part_error: float = 0.0

    def steady(self, range_limit: float, slope_limit: float) -> bool:
        """The SNIA limits on levels, where the window can tell: a range or an excursion
        beyond its limit counts only when the noise could not have made it (issue 32:
        a 5 s window of flat seconds at CV 10 % spans more than 20 % half the time), and
        no drift the noise cannot explain."""
        range_ok = self.range_share <= max(range_limit, self.noise_range)
        slope_ok = self.slope_share <= slope_limit or self.slope_low <= 0.0 <= self.slope_high
        return range_ok and slope_ok and not self.drifting

    @property
    def smallest_drift(self) -> float:
        """The smallest excursion (share of the mean) this window could call a drift: half
        the width of its 99 % interval, or DRIFT_MIN."""
        return max(DRIFT_MIN, (self.slope_high - self.slope_low) / 2)


def level_check(samples: Sequence[float], parts: int = PARTS) -> LevelCheck | None:
    """Judge a window of per-second samples on levels (None when its mean is 0 or it has
    fewer than 3 samples): raw seconds of a flat device at per-second CV 10 % span
    ~40 % of their mean over 30 s, their part means ~10 %. The drift's interval and the
    noise's range use the seconds' AR(1) noise (stats.arnoise.trend) with critical
    values by window length (`drift_critical`, `range_critical`) that keep each test's
    false alarms on flat windows at 1 % or less for AR(1) phi up to 0.9."""
    values = finite_sample(samples, "samples") if samples else []
    if len(values) < 3:
        return None
    parts = min(parts, len(values))  # a 5 s window: its seconds are its parts
    mean = statistics.fmean(values)
    if mean == 0.0:
        return None
    n = len(values)
    means = [statistics.fmean(values[i * n // parts : (i + 1) * n // parts])
             for i in range(parts)]
    line = arnoise.trend(values)
    floor = (arnoise.LOG_FLOOR * abs(mean)) ** 2  # a throttled disk's ±0.2 % is no noise
    scale = math.sqrt(max(1.0, floor / line.sigma2)) if line.sigma2 > 0 else 1.0
    error = line.slope_error * scale * (n - 1) / abs(mean)
    excursion = line.slope * (n - 1) / abs(mean)
    half = drift_critical(n) * error
    low, high = excursion - half, excursion + half
    drifting = (low > 0 or high < 0) and abs(excursion) >= DRIFT_MIN
    part = line.part_error(n // parts) * scale / abs(mean)
    return LevelCheck((max(means) - min(means)) / abs(mean), abs(excursion), low, high,
                      drifting, range_critical(n) * part, error, part)


def drift_critical(n: int) -> float:
    """Critical |excursion| / standard error of the drift test for a window of n seconds."""
    return arnoise.by_length(DRIFT_TABLE, n)


def range_critical(n: int) -> float:
    """Critical range of the part means, in standard errors of one part's mean."""
    return arnoise.by_length(RANGE_TABLE, n)
