"""Two windows of one run's seconds under AR(1) noise: is their difference real, and how
well is each level known (issue 32).

A disk's per-second rate wanders on a busy host: the noise is multiplicative (a second is
a share of the level, so a 3x burst has 3x the spread) and dependent from second to
second (AR(1), phi up to 0.9). So the windows are compared on the logarithms of the
seconds, and their means' variances are the exact ones of an AR(1) series with the
windows' lengths and places, not the long-run approximation sigma^2 (1+phi)/(1-phi)/n
(which overstates the variance of a 10 s mean at phi 0.9 by 2.6x and ignores that two
adjacent windows wander together):

- the noise is measured on both windows, the sustained one around its mean and the early
  one around its least-squares line: on the log scale multiplicative noise is the same at
  both levels, and the early window's own shape (a ramp, a warm-up's curve) is not noise;
- phi is the residuals' lag-1 autocorrelation, corrected for its small-sample bias
  (Kendall: -(1 + 3 phi)/m per window of m seconds), then taken at an upper bound
  (+PHI_UPPER_Z sqrt((1 - phi^2)/m)): a minute of seconds says little about phi, and the
  variance of a mean grows fast as phi nears 1, so a wandering flat run is judged as
  wandering unless its seconds show they do not. Capped at MAX_PHI.
- sigma^2 (the seconds' own variance) by moments: the residual sum of squares over its
  expectation under that phi (a 10 s window of phi 0.9 seconds sees only a quarter of
  their variance around its own mean).

`shift_z` is the difference of the two windows' mean logs over its standard error. Its
null distribution, with the boundary placed where the difference looks largest, is not
normal: `critical(n)` is its upper 4 % point at the worst noise the detector's claims
cover (AR(1) 0.9, per-second CV 15 %), by run length, from a seeded simulation
(bench/changepoint_rates.py --calibrate prints the table).
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# phi at most this: above it a minute of seconds is a random walk to any test.
MAX_PHI = 0.95
# phi is taken this many standard errors above its estimate. A far bound, not a stated
# confidence: it is what separates wander from level shifts best, each with critical
# values calibrated to it (2026-11-28, 800 series a cell): a 3x burst of 10 s in 40 s
# under AR(1) 0.9 at CV 15 % was found in 86 % of runs at 1.645, 97 % at 2.5, 99 % at 3.5,
# at the same 4 % false rate.
PHI_UPPER_Z = 3.5
# The seconds' log-spread is at least this (0.5 %): a throttled disk's rate is constant
# to +-0.2 %, and shifts of a few IOPS mean nothing.
LOG_FLOOR = 0.005
# Level intervals (stated as 95 %) use the two-sided 99 % normal quantile: with phi and
# sigma estimated from one run, 1.96 covered the true levels of 3x bursts under AR(1) 0.9
# noise at CV 15 % in 94-96 % of runs (10 s in 40 s, 5 s in 15 s); 2.576 covers them in
# 98-99 % (bench/claims.py --burst).
LEVEL_Z = 2.576
# critical(n): (run length in kept seconds, critical z), from
# bench/changepoint_rates.py --calibrate (seed 32; 4000 flat series a length and noise up
# to 200 s, 1000 at 300 and 600 s): the upper 4 % point of shift_z of the window the
# detector would report, the largest over iid to AR(1) 0.9 at CV 5-15 % and Student t3
# tails (AR 0.9: t3 at CV 10 % or normal at CV 15 %), rounded up to 0.05, then made
# non-increasing in the length (a longer run never needs a larger value; the estimates
# of the upper 4 % point wander by ~0.1).
CRITICAL_TABLE: tuple[tuple[int, float], ...] = (
    (10, 3.9), (20, 3.9), (25, 3.8), (30, 3.6), (40, 3.6), (50, 3.5), (60, 3.3),
    (80, 3.15), (100, 3.05), (150, 3.0), (200, 3.0), (300, 2.85), (600, 2.6),
)


@dataclass(frozen=True)
class ArFit:
    """AR(1) noise of a run's windows on the log scale: the seconds' variance and phi
    (at its upper bound)."""

    sigma2: float
    phi: float


def block_sum(m: int, phi: float) -> float:
    """sum over i, j < m of phi^|i - j|: m^2 times the variance of a mean of m AR(1)
    seconds in units of their own variance."""
    if phi == 0.0:
        return float(m)
    return m * (1 + phi) / (1 - phi) - 2 * phi * (1 - phi ** m) / (1 - phi) ** 2


def cross_sum(p: int, gap: int, m: int, phi: float) -> float:
    """sum over i < p and j in [p + gap, p + gap + m) of phi^(j - i): the covariance of
    the sums of a window of p seconds and of one of m seconds `gap` seconds after it."""
    if phi == 0.0:
        return 0.0
    return (1 - phi ** p) / (1 - phi) * phi ** (gap + 1) * (1 - phi ** m) / (1 - phi)


def _logs(values: Sequence[float]) -> list[float]:
    return [math.log(max(v, 1e-12)) for v in values]


def fit(windows: Sequence[Sequence[float]],
        places: Sequence[Sequence[int]] | None = None) -> ArFit:
    """The AR(1) noise of log-values split in windows with a level each; `places` are the
    seconds' places in the run (stalls set aside leave gaps: a pair of seconds on either
    side of one is not a lag-1 pair), consecutive when not given."""
    residuals = []
    for w in windows:
        mean = statistics.fmean(w)
        residuals.append([v - mean for v in w])
    n = sum(len(r) for r in residuals)
    rss = sum(v * v for r in residuals for v in r)
    dof = max(1, n - len(residuals))
    if rss == 0.0:
        return ArFit(LOG_FLOOR ** 2, 0.0)
    lag = 0.0
    for i, r in enumerate(residuals):
        where = places[i] if places is not None else range(len(r))
        lag += sum(r[j] * r[j + 1] for j in range(len(r) - 1) if where[j + 1] - where[j] == 1)
    lag /= dof
    phi = lag / (rss / dof)
    phi = min(MAX_PHI, max(0.0, phi + (1 + 3 * phi) * len(residuals) / n))
    phi = min(MAX_PHI, phi + PHI_UPPER_Z * math.sqrt(max(0.0, 1 - phi * phi) / n))
    expected = sum(len(r) - block_sum(len(r), phi) / len(r) for r in residuals)
    sigma2 = rss / expected if expected > 0 else rss / dof
    return ArFit(max(sigma2, LOG_FLOOR ** 2), phi)


def _detrended(values: Sequence[float]) -> list[float]:
    """Residuals around a least-squares line, put back on the window's mean (a ramp's
    shape is not noise)."""
    if len(values) < 3:
        return list(values)
    line = statistics.linear_regression(range(len(values)), values)
    mean = statistics.fmean(values)
    return [v - (line.intercept + line.slope * t) + mean for t, v in enumerate(values)]


def _noise(early: Sequence[float], sustained: Sequence[float],
           places: Sequence[Sequence[int]] | None) -> ArFit:
    """The windows' noise (log seconds): the sustained window around its mean, the early
    one around its least-squares line. A ramp's or a warm-up's shape is not noise; the
    sustained seconds alone were too few where a burst fills most of a short run (a 2x
    burst of 20 s in 30 s under iid CV 15 % noise was found in 16 % of runs, 79 % so)."""
    return fit([_detrended(early), sustained], places)


def shift_z(early: Sequence[float], sustained: Sequence[float], gap: int = 1,
            places: Sequence[Sequence[int]] | None = None) -> float:
    """|difference of the windows' mean logs| over its standard error, the windows `gap`
    seconds apart (the second that straddles the change is in neither; `places`: see
    fit); 0 when a window has fewer than 2 seconds."""
    if len(early) < 2 or len(sustained) < 2:
        return 0.0
    a, b = _logs(early), _logs(sustained)
    noise = _noise(a, b, places)
    p, m = len(a), len(b)
    var = noise.sigma2 * (block_sum(p, noise.phi) / p ** 2 + block_sum(m, noise.phi) / m ** 2
                          - 2 * cross_sum(p, gap, m, noise.phi) / (p * m))
    difference = abs(statistics.fmean(a) - statistics.fmean(b))
    return difference / math.sqrt(var) if var > 0 else math.inf


def level_intervals(early: Sequence[float], sustained: Sequence[float],
                    places: Sequence[Sequence[int]] | None = None
                    ) -> tuple[tuple[float, float], tuple[float, float]]:
    """(low, high) of each window's mean rate: the window's arithmetic mean times
    exp(-+LEVEL_Z standard errors of its mean log) under the windows' AR(1) noise."""
    a, b = _logs(early), _logs(sustained)
    noise = _noise(a, b, places) if len(b) > 2 else ArFit(LOG_FLOOR ** 2, 0.0)
    out = []
    for logs, raw in ((a, early), (b, sustained)):
        se = math.sqrt(noise.sigma2 * block_sum(len(logs), noise.phi)) / len(logs)
        mean = statistics.fmean(raw)
        out.append((mean * math.exp(-LEVEL_Z * se), mean * math.exp(LEVEL_Z * se)))
    return out[0], out[1]


def by_length(table: Sequence[tuple[int, float]], n: int) -> float:
    """A critical value for n seconds from a table of (seconds, value): linear in log n
    between its lengths, its ends beyond them."""
    lengths = [k for k, _ in table]
    i = bisect.bisect_right(lengths, n)
    if i == 0:
        return table[0][1]
    if i == len(table):
        return table[-1][1]
    (n0, c0), (n1, c1) = table[i - 1], table[i]
    share = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
    return c0 + share * (c1 - c0)


def critical(n: int) -> float:
    """The critical shift_z for a run of n kept seconds (CRITICAL_TABLE, by_length)."""
    return by_length(CRITICAL_TABLE, n)


def quad_form(weights: Sequence[float], phi: float) -> float:
    """sum over i, j of w_i w_j phi^|i - j| (the variance of sum w_i x_i for AR(1) seconds
    of unit variance), in one pass."""
    total = math.fsum(w * w for w in weights)
    carry = 0.0
    for j in range(1, len(weights)):
        carry = phi * (carry + weights[j - 1])
        total += 2 * weights[j] * carry
    return total


@dataclass(frozen=True)
class TrendFit:
    """A least-squares line through a window of seconds under AR(1) noise: its slope per
    second, the slope's standard error, and the standard error of a mean of m of the
    window's seconds (`part_error(m)`)."""

    slope: float
    slope_error: float
    sigma2: float
    phi: float

    def part_error(self, m: int) -> float:
        """Standard error of the mean of m consecutive seconds."""
        return math.sqrt(self.sigma2 * block_sum(m, self.phi)) / m


def trend(values: Sequence[float]) -> TrendFit:
    """The window's line and its errors: phi from the residuals (bias-corrected, at its
    upper bound, as `fit`), sigma^2 by moments (the residual sum of squares over its
    expectation n - tr(H Sigma) under that phi, H the line's hat matrix)."""
    n = len(values)
    times = range(n)
    line = statistics.linear_regression(times, values)
    residuals = [v - (line.intercept + line.slope * t) for t, v in zip(times, values,
                                                                       strict=True)]
    centred = [t - (n - 1) / 2 for t in times]
    stt = math.fsum(c * c for c in centred)
    rss = math.fsum(r * r for r in residuals)
    dof = max(1, n - 2)
    phi = 0.0
    if rss > 0.0:
        lag = math.fsum(a * b for a, b in itertools.pairwise(residuals)) / dof
        phi = lag / (rss / dof)
        phi = min(MAX_PHI, max(0.0, phi + (1 + 3 * phi) * 2 / n))
        phi = min(MAX_PHI, phi + PHI_UPPER_Z * math.sqrt(max(0.0, 1 - phi * phi) / n))
    spread = quad_form(centred, phi)
    expected = n - block_sum(n, phi) / n - spread / stt
    sigma2 = rss / expected if expected > 0 else rss / dof
    return TrendFit(line.slope, math.sqrt(sigma2 * spread) / stt, sigma2, phi)
