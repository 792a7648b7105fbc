"""Regimes within one run: level shifts in a per-second series, and what they mean.

A cloud disk that bursts runs at its burst rate until its credit bucket is empty, then at
its sustained rate; a cold cache or a thin volume's first writes run slower until they
warm. Either shows as a level shift in the run's per-second rate (fio's averaged logs,
pgbench --progress). This module finds the shifts and names the regime:

- **burst**: the run starts above the level it ends at (a high window, then sustained);
- **warmup**: the run starts below it (a low window, then sustained);
- **flat**: no early window that differs from the end level by `min_change` or more.

Method: PELT (Killick, Fearnhead & Eckley 2012, "Optimal detection of changepoints with a
linear computational cost", JASA 107:1590), exact minimisation of the sum of squared
deviations from each segment's mean plus a penalty per change, written out here (~40
lines; `ruptures` would do the same but brings numpy and scipy into the statistics layer,
which imports only the standard library). The penalty is the Schwarz/BIC one for a change
in mean with known variance, log(n) per parameter and two parameters per change (the new
mean and the change's place), 2 log(n) sigma^2, here with a margin: `PENALTY` = 6, i.e.
6 log(n) sigma^2, chosen on the seeded false-detection simulation
(bench/changepoint_rates.py; with 3, 3-9 % of flat series with 10 % or heavy-tailed noise
were flagged). sigma is
estimated robustly from the first differences (MAD / sqrt(2) * 1.4826): a level shift moves
one difference, not the spread, so the estimate is the second-to-second noise even in a
series that bursts. PELT segments a running median of 3 of the series (levels are taken
from the raw samples): a single wild second cannot form a segment of its own, which cut
false detections on heavy-tailed (Student t3) noise from 1.3-1.7 % to 0.2 % with no loss
of detection. A throttled disk's per-second rate is nearly constant (±0.2 %), so
sigma has a floor (`NOISE_FLOOR` of the median level): shifts of a few IOPS are real to the
penalty but mean nothing, and `min_change` (10 % by default) is the size of shift that
counts: adjacent segments closer than that are merged. Segments are at least `min_size`
samples long (3 s), so a 1-2 s stall or fio's ramp-in second does not make a regime; a
longer stall in mid-run is a dip, not an early window, and is left to stats.series.stalls.

Real per-second series are not independent (issue 21): a busy host makes them wander
(AR(1) noise), runs stall and end raggedly. So, before a shift is a regime:
- stalls are set aside first (stats.stallspans: near-zero seconds of any length, dips
  below half the local level of up to 5 s), never a level and never an early window;
- the sustained level is the last segment of 5 s or more: shorter ones after it are the
  run's end (a partial last second, jobs finishing one by one, a final flush);
- the early window must differ from the sustained level by `min_change` (10 %), last
  `min_size` (3 s) or more, and be significant under the series' own dependence
  (issue 32, stats.arnoise): the difference of the windows' mean logs over its exact
  AR(1) standard error at least `arnoise.critical(n)`, a critical value by run length
  calibrated on flat series up to AR(1) 0.9 at CV 15 %; the early window ends, of the
  leading segments, where that difference is clearest;
- a series under MIN_SECONDS (10 s) is too short to judge.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats import arnoise
from volbench.stats.stallspans import stall_spans
from volbench.stats.validation import StatisticsInputError, finite_sample

BURST, WARMUP, FLAT, TOO_SHORT = "burst", "warmup", "flat", "too short"
PENALTY = 6.0
NOISE_FLOOR = 0.005
MIN_SIZE = 3
MIN_CHANGE = 0.10
# The shortest series the detector judges (issue 32): a 4 s early window, the second that
# straddles the change and the 5 s (TAIL_SECONDS) its noise is measured on. From here its
# stated rates hold (docs/time.md: flat runs flagged at most 5 % up to AR(1) 0.9 and CV
# 15 %, a 3x burst of 4 s found in 96 % or more even then); a shorter run is "too short",
# and the report says so.
MIN_SECONDS = 10
# Longer series are segmented on block means (see regimes).
MAX_POINTS = 600
# The sustained segment is the last one at least this long; shorter ones after it are the
# run's end (a partial last second, jobs finishing one by one, a final flush).
TAIL_SECONDS = 5
# AR(1) coefficients are capped here: above it a series is a random walk to any test.
MAX_PHI = 0.95


@dataclass(frozen=True)
class Segment:
    """Samples [start, end) at one level (their mean)."""

    start: int
    end: int
    level: float

    @property
    def size(self) -> int:
        """How many samples the segment holds (never negative for a segment found)."""
        return self.end - self.start


@dataclass(frozen=True)
class Regimes:
    """What a run's series did: `kind` (burst, warmup, flat or too short), the segments
    found, and the early window (samples [0, boundary)) against the sustained one
    ([boundary, n); its level is taken from boundary + 1 on, as the second at the boundary
    may straddle the change). `early_seconds` counts the sample that straddles the boundary by how
    far its value lies between the two levels; `early_level` is None for a flat run."""

    kind: str
    segments: tuple[Segment, ...]
    boundary: int
    early_level: float | None
    early_seconds: float
    sustained_level: float
    n: int
    # Stalled seconds [start, end) (set aside, never a level) and the end of the sustained
    # window (exclusive): the seconds after it are the run's end.
    stalls: tuple[tuple[int, int], ...] = ()
    end: int = -1
    # (low, high) of the early and the sustained level (stats.arnoise.level_intervals),
    # None for a flat run.
    early_interval: tuple[float, float] | None = None
    sustained_interval: tuple[float, float] | None = None

    def early_indexes(self) -> list[int]:
        """The seconds the early level is the mean of (stalls left out)."""
        return [i for i in range(self.boundary) if not self._stalled(i)]

    def sustained_indexes(self) -> list[int]:
        """The seconds the sustained level is the mean of: after the second that straddles
        the change, before the run's end, stalls left out."""
        end = self.n if self.end < 0 else self.end
        start = self.boundary + 1 if self.early_level is not None else 0
        return [i for i in range(start, end) if not self._stalled(i)]

    def _stalled(self, index: int) -> bool:
        return any(a <= index < b for a, b in self.stalls)

    @property
    def burst_seconds(self) -> float:
        """The early window's length in seconds when the run began with a burst, else 0."""
        return self.early_seconds if self.kind == BURST else 0.0

    @property
    def warmup_seconds(self) -> float:
        """The early window's length in seconds when the run began with a warm-up, else 0."""
        return self.early_seconds if self.kind == WARMUP else 0.0

    @property
    def burst_level(self) -> float:
        """The early level when the run began with a burst, else 0 (never None)."""
        return self.early_level if self.kind == BURST and self.early_level is not None else 0.0


def noise_sigma(values: Sequence[float]) -> float:
    """Second-to-second noise: 1.4826 * MAD of the first differences / sqrt(2)."""
    if len(values) < 3:
        return 0.0
    diffs = [b - a for a, b in itertools.pairwise(values)]
    center = statistics.median(diffs)
    mad = statistics.median(abs(d - center) for d in diffs)
    return 1.4826 * mad / math.sqrt(2.0)


def long_run_sigma(residuals: Sequence[float]) -> tuple[float, float]:
    """(sigma of the mean's noise per sample, AR(1) phi) of zero-mean residuals: how
    noisy and how dependent a run's seconds are, for the report's words (the detector's
    own test is stats.arnoise's).

    The long-run variance of an AR(1) series is sigma^2 (1 + phi) / (1 - phi): the
    variance of a mean of m dependent seconds is that over m. phi is the lag-1
    autocorrelation, corrected for its small-sample bias (Kendall: -(1 + 3 phi) / n) and
    kept within [0, MAX_PHI]; negative dependence is taken as none (conservative)."""
    n = len(residuals)
    if n < 3:
        return 0.0, 0.0
    var = sum(r * r for r in residuals) / (n - 1)
    if var == 0.0:
        return 0.0, 0.0
    lag = sum(a * b for a, b in itertools.pairwise(residuals)) / (n - 1)
    phi = lag / var
    phi = min(MAX_PHI, max(0.0, phi + (1 + 3 * phi) / n))
    return math.sqrt(var * (1 + phi) / (1 - phi)), phi


def median3(values: Sequence[float]) -> list[float]:
    """Running median of 3 (ends kept): removes single-sample spikes, keeps steps."""
    if len(values) < 3:
        return list(values)
    inner = [statistics.median(values[i - 1 : i + 2]) for i in range(1, len(values) - 1)]
    return [values[0], *inner, values[-1]]


def pelt(values: Sequence[float], penalty: float, min_size: int = MIN_SIZE) -> list[int]:
    """Change points (segment starts after 0) minimising squared error + penalty per change.

    PELT with the pruning rule for a cost where splitting never costs more (K = 0): a
    candidate whose best cost already exceeds the optimum at t can never be optimal later.
    """
    n = len(values)
    s1, s2 = [0.0], [0.0]
    for v in values:
        s1.append(s1[-1] + v)
        s2.append(s2[-1] + v * v)

    def cost(a: int, b: int) -> float:
        total = s1[b] - s1[a]
        return max(s2[b] - s2[a] - total * total / (b - a), 0.0)

    best = [0.0] * (n + 1)
    best[0] = -penalty
    previous = [0] * (n + 1)
    candidates = [0]
    for t in range(min_size, n + 1):
        if t - min_size >= min_size:
            candidates.append(t - min_size)
        scored = [(best[s] + cost(s, t) + penalty, s) for s in candidates]
        best[t], previous[t] = min(scored)
        candidates = [s for v, s in scored if v - penalty <= best[t]]
    points: list[int] = []
    t = n
    while t > 0:
        t = previous[t]
        if t > 0:
            points.append(t)
    return sorted(points)


def _segments(values: Sequence[float], points: Sequence[int]) -> list[Segment]:
    edges = [0, *points, len(values)]
    return [Segment(a, b, statistics.fmean(values[a:b])) for a, b in itertools.pairwise(edges)]


def _differ(a: float, b: float, min_change: float) -> bool:
    scale = max(abs(a), abs(b))
    return scale > 0 and abs(a - b) / scale >= min_change


def merge_close(
    values: Sequence[float], segments: list[Segment], min_change: float
) -> list[Segment]:
    """Merge the closest adjacent pair until every neighbour differs by `min_change`."""
    segs = list(segments)
    while len(segs) > 1:
        gaps = [abs(a.level - b.level) / max(abs(a.level), abs(b.level), 1e-300)
                for a, b in itertools.pairwise(segs)]
        i = min(range(len(gaps)), key=gaps.__getitem__)
        if gaps[i] >= min_change:
            break
        a, b = segs[i], segs[i + 1]
        segs[i : i + 2] = [Segment(a.start, b.end, statistics.fmean(values[a.start : b.end]))]
    return segs


def _share(value: float, early: float, sustained: float) -> float:
    """How much of a straddling sample's second belongs to the early level (0..1)."""
    return min(1.0, max(0.0, (value - sustained) / (early - sustained)))


def regimes(
    values: Sequence[float],
    *,
    min_change: float = MIN_CHANGE,
    min_size: int = MIN_SIZE,
    penalty: float = PENALTY,
) -> Regimes:
    """Find the level shifts in a per-second series and name the run's regime.

    Stalls (stats.stallspans) are set aside first: they are reported in `stalls`, never a
    level. The sustained level is the last segment of `TAIL_SECONDS` or more; shorter
    segments after it are the run's end (the last partial second, jobs finishing one by
    one) and judge nothing. The early window is taken from the leading run of segments
    all above it (burst) or all below it (warmup) by `min_change`, and ends where the
    shift is clearest (the largest stats.arnoise.shift_z); it is kept when it lasts
    `min_size` seconds or longer and that shift_z reaches arnoise.critical(n). A series
    shorter than MIN_SECONDS is "too short". Beyond MAX_POINTS samples the segments are
    found on means of k = ceil(n / MAX_POINTS) samples, the boundary then placed on the
    raw samples. The levels come with intervals (`early_interval`, `sustained_interval`).
    """
    if not values:
        return Regimes(TOO_SHORT, (), 0, None, 0.0, 0.0, 0)
    sample = finite_sample(values, "values")
    if not 0.0 < min_change < 1.0:
        raise StatisticsInputError(f"min_change must be between 0 and 1, got {min_change!r}")
    if min_size < 1:
        raise StatisticsInputError(f"min_size must be at least 1, got {min_size!r}")
    n = len(sample)
    if n < max(2 * min_size + 1, MIN_SECONDS):
        return Regimes(TOO_SHORT, (Segment(0, n, statistics.fmean(sample)),), 0, None, 0.0,
                       statistics.fmean(sample), n)
    stalled = stall_spans(sample)
    kept = _kept_indexes(n, stalled)
    flat = _flat(sample, kept, stalled, n)
    if len(kept) < 2 * min_size + 1:
        return flat
    series = [sample[i] for i in kept]
    segs = _segment(series, min_change, min_size, penalty)
    found = _candidate(series, segs, min_change, min_size, kept)
    if found is None or found.z < arnoise.critical(len(series)):
        return dataclasses.replace(flat, segments=tuple(_on_seconds(segs, kept, n)))
    boundary, tail = found.boundary, found.tail
    early_ci, sustained_ci = arnoise.level_intervals(
        series[:boundary], series[boundary + 1 : tail],
        (kept[:boundary], kept[boundary + 1 : tail]))
    return Regimes(found.kind, tuple(_on_seconds(segs, kept, n)), kept[boundary],
                   found.early_level, found.seconds, found.sustained_level, n,
                   tuple(stalled), kept[tail - 1] + 1, early_ci, sustained_ci)


@dataclass(frozen=True)
class Candidate:
    """The early window the detector would report, before its significance is judged:
    kept seconds [0, boundary) against [boundary + 1, tail), and shift_z of the two."""

    kind: str
    boundary: int
    tail: int
    early_level: float
    sustained_level: float
    seconds: float
    z: float


def candidate(values: Sequence[float], *, min_change: float = MIN_CHANGE,
              min_size: int = MIN_SIZE, penalty: float = PENALTY) -> Candidate | None:
    """The early window of a series with its stalls set aside, and its shift_z, or None
    when there is none to judge (for the calibration of arnoise.critical)."""
    sample = finite_sample(values, "values")
    kept = _kept_indexes(len(sample), stall_spans(sample))
    if len(kept) < 2 * min_size + 1:
        return None
    series = [sample[i] for i in kept]
    return _candidate(series, _segment(series, min_change, min_size, penalty), min_change,
                      min_size, kept)


def _candidate(series: Sequence[float], segs: Sequence[Segment], min_change: float,
               min_size: int, kept: Sequence[int]) -> Candidate | None:
    last = _sustained_segment(segs)
    side, early = _leading(segs, last, min_change)
    if early == 0:
        return None
    tail = segs[last].end
    # Of the leading segments (each min_change off the last one), the early window ends
    # where the run is most clearly off its sustained level (the largest shift_z). Taking
    # them all mixed both levels where a wandering sustained level splits into segments
    # that differ from the last one by min_change too (issue 32: a 3x burst under AR(1)
    # 0.9 noise was found in 70 % of runs).
    found = [c for step in range(1, early + 1)
             if (c := _window(series, segs, step, tail, side, min_change, min_size, kept))]
    return max(found, key=lambda c: c.z, default=None)


def _window(series: Sequence[float], segs: Sequence[Segment], step: int, tail: int,
            side: int, min_change: float, min_size: int, kept: Sequence[int]
            ) -> Candidate | None:
    """The early window ending where segment `step` starts, with its shift_z; None when
    it is shorter than min_size seconds or within min_change of the sustained level."""
    boundary = segs[step].start
    k = math.ceil(len(series) / MAX_POINTS)
    if k > 1:  # the block holding the change may have gone to the sustained side
        boundary = _advance(series, boundary, segs[step].end, k)
    boundary = _refine(series, boundary, min_size * k)
    # The noise is measured on the sustained seconds (stats.arnoise): a few seconds say
    # nothing of it (with stalls set aside, 2-4 of them gave shift_z of 10 or more).
    if boundary < 2 or tail - boundary - 1 < TAIL_SECONDS:
        return None
    early_level = statistics.fmean(series[:boundary])
    # The first sustained second may straddle the change: the level is taken after it.
    sustained = statistics.fmean(series[boundary + 1 : tail])
    seconds = (boundary - 1 + _share(series[boundary - 1], early_level, sustained)
               + _share(series[boundary], early_level, sustained))
    # A slow first second or two is the tool starting, not a regime.
    if seconds < min_size or not _differ(early_level, sustained, min_change):
        return None
    z = arnoise.shift_z(series[:boundary], series[boundary + 1 : tail],
                        kept[boundary + 1] - kept[boundary - 1] - 1,
                        (kept[:boundary], kept[boundary + 1 : tail]))
    return Candidate(BURST if side > 0 else WARMUP, boundary, tail, early_level, sustained,
                     seconds, z)


def _leading(segs: Sequence[Segment], last: int, min_change: float) -> tuple[int, int]:
    """(side, count) of the leading segments all above (1) or all below (-1) the
    sustained segment `last` by min_change; (0, 0) when the first is not."""
    side = early = 0
    for seg in segs[:last]:
        here = 0 if not _differ(seg.level, segs[last].level, min_change) else (
            1 if seg.level > segs[last].level else -1)
        if here == 0 or (side and here != side):
            break
        side, early = here, early + 1
    return side, early


def _kept_indexes(n: int, stalled: Sequence[tuple[int, int]]) -> list[int]:
    out = set(range(n))
    for a, b in stalled:
        out.difference_update(range(a, b))
    return sorted(out)


def _flat(sample: Sequence[float], kept: Sequence[int], stalled: Sequence[tuple[int, int]],
          n: int) -> Regimes:
    """A flat run: one level, the mean of the seconds that did not stall."""
    level = statistics.fmean(sample[i] for i in kept) if kept else 0.0
    return Regimes(FLAT, (Segment(0, n, level),), 0, None, 0.0, level, n, tuple(stalled), n)


def _on_seconds(segs: Sequence[Segment], kept: Sequence[int], n: int) -> list[Segment]:
    """Segments found on the kept seconds, placed back on the run's seconds."""
    edges = [kept[s.start] for s in segs] + [n]
    return [Segment(edges[i], edges[i + 1], s.level) for i, s in enumerate(segs)]


def _segment(series: Sequence[float], min_change: float, min_size: int,
             penalty: float) -> list[Segment]:
    """PELT on a running median of 3 (block means beyond MAX_POINTS), neighbours closer
    than min_change merged; levels are the raw samples' means."""
    n = len(series)
    k = math.ceil(n / MAX_POINTS)
    coarse = series if k == 1 else [statistics.fmean(series[i : i + k]) for i in range(0, n, k)]
    scale = statistics.median(abs(v) for v in series)
    sigma = max(noise_sigma(coarse), NOISE_FLOOR * scale)
    if sigma == 0.0:
        return [Segment(0, n, statistics.fmean(series))]
    # Segmented on a running median of 3: one wild second (heavy-tailed noise) cannot
    # make a segment, and a step keeps its edge; levels come from the raw samples.
    points = pelt(median3(coarse), penalty * math.log(len(coarse)) * sigma * sigma, min_size)
    return merge_close(series, _segments(series, [p * k for p in points]), min_change)


def _sustained_segment(segs: Sequence[Segment]) -> int:
    """Index of the last segment of TAIL_SECONDS or more: shorter ones after it are the
    run's end (a partial last second, jobs finishing one by one, a final flush)."""
    for i in range(len(segs) - 1, -1, -1):
        if segs[i].size >= TAIL_SECONDS:
            return i
    return len(segs) - 1


def _advance(sample: Sequence[float], boundary: int, end: int, steps: int) -> int:
    """Move the boundary forward over samples nearer the early level than the sustained."""
    early = statistics.median(sample[:boundary])
    sustained = statistics.median(sample[boundary:end])
    for _ in range(steps):
        value = sample[boundary]
        if boundary + 1 >= end or abs(value - early) >= abs(value - sustained):
            break
        boundary += 1
    return boundary


def _refine(sample: Sequence[float], boundary: int, steps: int) -> int:
    """Move the boundary back over samples nearer the sustained level than the early one.

    A segment is at least min_size samples, so the second that straddles the change can
    drag min_size - 1 sustained seconds into the early window with it, and itself be
    nearer the sustained level.
    """
    sustained = statistics.median(sample[boundary:])
    for _ in range(steps):
        if boundary <= 1:
            break
        early = statistics.median(sample[:boundary])
        value = sample[boundary - 1]
        if abs(value - sustained) >= abs(value - early):
            break
        boundary -= 1
    return boundary
