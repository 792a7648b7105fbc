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
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.validation import StatisticsInputError, finite_sample

BURST, WARMUP, FLAT, TOO_SHORT = "burst", "warmup", "flat", "too short"
PENALTY = 6.0
NOISE_FLOOR = 0.005
MIN_SIZE = 3
MIN_CHANGE = 0.10
# Longer series are segmented on block means (see regimes).
MAX_POINTS = 600


@dataclass(frozen=True)
class Segment:
    """Samples [start, end) at one level (their mean)."""

    start: int
    end: int
    level: float

    @property
    def size(self) -> int:
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

    @property
    def burst_seconds(self) -> float:
        return self.early_seconds if self.kind == BURST else 0.0

    @property
    def warmup_seconds(self) -> float:
        return self.early_seconds if self.kind == WARMUP else 0.0

    @property
    def burst_level(self) -> float:
        return self.early_level if self.kind == BURST and self.early_level is not None else 0.0


def noise_sigma(values: Sequence[float]) -> float:
    """Second-to-second noise: 1.4826 * MAD of the first differences / sqrt(2)."""
    if len(values) < 3:
        return 0.0
    diffs = [b - a for a, b in itertools.pairwise(values)]
    center = statistics.median(diffs)
    mad = statistics.median(abs(d - center) for d in diffs)
    return 1.4826 * mad / math.sqrt(2.0)


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

    The sustained level is the last segment's; the early window is the longest leading run
    of segments all above it (burst) or all below it (warmup) by `min_change`. A series
    shorter than 2 * min_size + 1 samples cannot show two regimes: kind "too short".
    Beyond MAX_POINTS samples the segments are found on means of k = ceil(n / MAX_POINTS)
    samples (min_size blocks, not samples), the boundary then placed on the raw samples.
    """
    if not values:
        return Regimes(TOO_SHORT, (), 0, None, 0.0, 0.0, 0)
    sample = finite_sample(values, "values")
    if not 0.0 < min_change < 1.0:
        raise StatisticsInputError(f"min_change must be between 0 and 1, got {min_change!r}")
    if min_size < 1:
        raise StatisticsInputError(f"min_size must be at least 1, got {min_size!r}")
    n = len(sample)
    whole = [Segment(0, n, statistics.fmean(sample))]
    if n < 2 * min_size + 1:
        return Regimes(TOO_SHORT, tuple(whole), 0, None, 0.0, whole[0].level, n)
    # PELT's pruning does little on a flat series (10 800 s took 3 minutes): a long run is
    # segmented on means of k-second blocks, at most MAX_POINTS of them, then the
    # boundary is placed to the second on the raw samples.
    k = math.ceil(n / MAX_POINTS)
    coarse = sample if k == 1 else [statistics.fmean(sample[i : i + k]) for i in range(0, n, k)]
    scale = statistics.median(abs(v) for v in sample)
    sigma = max(noise_sigma(coarse), NOISE_FLOOR * scale)
    if sigma == 0.0:
        return Regimes(FLAT, tuple(whole), 0, None, 0.0, whole[0].level, n)
    # Segmented on a running median of 3: one wild second (heavy-tailed noise) cannot
    # make a segment, and a step keeps its edge; levels come from the raw samples.
    points = pelt(median3(coarse), penalty * math.log(len(coarse)) * sigma * sigma, min_size)
    segs = merge_close(sample, _segments(sample, [p * k for p in points]), min_change)
    last = segs[-1].level
    side = 0
    early = 0
    for seg in segs[:-1]:
        here = 0 if not _differ(seg.level, last, min_change) else (1 if seg.level > last else -1)
        if here == 0 or (side and here != side):
            break
        side, early = here, early + 1
    if early == 0:
        return Regimes(FLAT, tuple(segs), 0, None, 0.0, statistics.fmean(sample), n)
    boundary = segs[early].start
    if k > 1:  # the block holding the change may have gone to the sustained side
        boundary = _advance(sample, boundary, segs[early].end, k)
    boundary = _refine(sample, boundary, min_size * k)
    early_level = statistics.fmean(sample[:boundary])
    # The first sustained second may straddle the change: the level is taken after it.
    sustained = statistics.fmean(sample[boundary + 1 :])
    seconds = (boundary - 1 + _share(sample[boundary - 1], early_level, sustained)
               + _share(sample[boundary], early_level, sustained))
    if seconds < min_size:  # a slow first second or two is the tool starting, not a regime
        return Regimes(FLAT, tuple(segs), 0, None, 0.0, statistics.fmean(sample), n)
    kind = BURST if side > 0 else WARMUP
    return Regimes(kind, tuple(segs), boundary, early_level, seconds, sustained, n)


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
