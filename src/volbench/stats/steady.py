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

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.changepoint import long_run_sigma
from volbench.stats.validation import StatisticsInputError, finite_sample

WINDOW = 5
RANGE = 0.20
SLOPE = 0.10
# Within a run the range is judged on the means of this many consecutive parts of the
# window (SNIA's rounds are themselves means), not on raw seconds.
PARTS = 5
# A trend within a run counts when its 99 % interval excludes no trend (z below) and it
# moves the level by at least DRIFT_MIN across the window: a drift that the noise could
# not have made and that is large enough to matter.
DRIFT_Z = 2.576
DRIFT_MIN = 0.02


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
    99 % interval from the seconds' AR(1) long-run variance, and whether it drifts
    (the interval excludes 0 and the excursion is DRIFT_MIN or more)."""

    range_share: float
    slope_share: float
    slope_low: float
    slope_high: float
    drifting: bool

    def steady(self, range_limit: float, slope_limit: float) -> bool:
        """The SNIA limits on levels, and no drift the noise cannot explain."""
        return (self.range_share <= range_limit and self.slope_share <= slope_limit
                and not self.drifting)


def level_check(samples: Sequence[float], parts: int = PARTS) -> LevelCheck | None:
    """Judge a window of per-second samples on levels (None when its mean is 0 or it has
    fewer than 3 samples): raw seconds of a flat device at per-second CV 10 % span
    ~40 % of their mean over 30 s, their part means ~10 %."""
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
    times = list(range(n))
    fit = statistics.linear_regression(times, values)
    residuals = [v - (fit.intercept + fit.slope * t) for t, v in zip(times, values, strict=True)]
    sigma, _ = long_run_sigma(residuals)
    spread = sum((t - (n - 1) / 2) ** 2 for t in times)
    error = sigma / spread ** 0.5 * (n - 1) / abs(mean)
    excursion = fit.slope * (n - 1) / abs(mean)
    low, high = excursion - DRIFT_Z * error, excursion + DRIFT_Z * error
    drifting = (low > 0 or high < 0) and abs(excursion) >= DRIFT_MIN
    return LevelCheck((max(means) - min(means)) / abs(mean), abs(excursion), low, high,
                      drifting)
