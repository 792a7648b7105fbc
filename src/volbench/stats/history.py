"""Change points in a history: one case's headline metric, one value per experiment.

Method: binary segmentation with a rank CUSUM and a permutation test, in the family of
E-divisive means (Matteson & James 2014, "A nonparametric approach for multiple change
point analysis of multivariate data", JASA 109:334; used on performance histories by
MongoDB, Daly et al. ICPE 2020, and Apache Otava). Within a segment of m values, the
statistic at each split k is the standardised Wilcoxon rank sum of the first k values,
|R_k - k(m+1)/2| / sqrt(k(m-k)(m+1)/12); the split with the largest is the candidate.
Its p-value is the share of `permutations` random orders of the same ranks whose largest
statistic is at least as large (the null distribution depends only on m, so it is
computed once per segment length, seeded). A significant split (p <= alpha) whose two
sides' medians differ by `min_change` or more is a change point, and both sides are
searched again. Ranks make one stalled or wild experiment (heavy tails, a busy host)
move the statistic by one rank, not by its size; the permutation test makes the flat
false-alarm rate alpha at the first split, whatever the distribution, for independent
experiments.

Experiments that drift together (autocorrelated noise: a level that wanders over months)
are not exchangeable, and the permutation test alone then flags a flat history in up to
88 % of cases (AR(1) phi 0.9). So every change point found is tested once more against the
drift (`_drift_prune`): the lag-1 autocorrelation phi of the ranks around the segments'
means (the change points removed, so a step or a dip is not read as drift), corrected for
its downward bias in short segments (Kendall's (1 + 3 phi) / n per segment, plus a margin
of 0.35 / sqrt(n) for its spread), widens the statistic's null by the AR(1) long-run
factor sqrt((1 + phi) / (1 - phi)); the change point whose segment scan then has the
largest p-value above alpha goes, and the drift is read again, until all stand.

Seeded simulation (simulate_rates, tests/unit/test_history.py, bench/store.py): a 5 %
step after experiment 30 of 60 at CV 3 % is found within 3 experiments of where it is in
over 90 % of histories with independent, heavy-tailed or stalled noise, and flat
histories are flagged in at most 5 % of histories, with AR(1) drift up to phi 0.9 too.
The price: a step inside strong drift is rarely found (it cannot be told from the drift
on single values), and short histories lose some power (docs/store.md).

Read online instead (simulate_online: the history as it stood after each experiment, as a
team running `volbench history` nightly sees it), the same step is flagged by the 3rd
experiment after it in about 1-2 % of histories, not 90 %. Ranks cap the statistic of a
short last segment (3 values after a split, all the highest of 33: permutation p 0.034,
4 of 34: 0.024, above alpha 0.01), and the drift test's estimate, biased upwards by design
in short segments, widens the null further: even a 30 % step is flagged anywhere in 7 %
of histories 3 experiments after it, 57 % after 5 and 82 % after 8. Watching a flat
history grow from 6 to 60 experiments flags it at some look in about 6 % of histories
(each look about 0.5 %).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from volbench.stats.ranks import mann_whitney, midranks
from volbench.stats.validation import StatisticsInputError, finite_sample

ALPHA = 0.01
MIN_SIZE = 3
MIN_CHANGE = 0.01
PERMUTATIONS = 499
LONG, LONG_PERMUTATIONS = 200, 199
SEED = 24
# How far _refine looks on either side of the rank scan's split.
REACH = 6
# The drift estimate's margin (x 1/sqrt(n)) and its ceiling (the long-run factor grows
# without bound as phi nears 1; at 0.95 it is 6.2).
DRIFT_MARGIN = 0.35
DRIFT_MAX = 0.95


@dataclass(frozen=True)
class ChangePoint:
    """A change in level: experiments from `index` on (0-based) differ from those before.

    `before`/`after` are the medians of the segments on either side, `change` the
    relative difference after/before - 1, `p_value` the permutation test's."""

    index: int
    before: float
    after: float
    change: float
    p_value: float


def _weights(m: int, min_size: int) -> tuple[list[float], list[float]]:
    """Centres k(m+1)/2 and 1/sd of the rank sum of the first k, for k in the scan."""
    ks = range(min_size, m - min_size + 1)
    return ([k * (m + 1) / 2 for k in ks],
            [1.0 / math.sqrt(k * (m - k) * (m + 1) / 12) for k in ks])


def _scan(ranks: Sequence[float], min_size: int) -> tuple[float, int]:
    """(largest standardised rank sum, the split k where it is)."""
    m = len(ranks)
    centres, weights = _weights_cached(m, min_size)
    sums = list(itertools.accumulate(ranks))[min_size - 1:m - min_size]
    stats = [abs(s - c) * w for s, c, w in zip(sums, centres, weights, strict=True)]
    best = max(range(len(stats)), key=stats.__getitem__)
    return stats[best], best + min_size


_weights_cached = lru_cache(maxsize=256)(_weights)


@lru_cache(maxsize=256)
def _null(m: int, min_size: int, permutations: int, seed: int) -> tuple[float, ...]:
    """The largest statistic of `permutations` seeded random orders of 1..m, sorted."""
    rng = random.Random(seed * 100_003 + m)
    order = [float(i) for i in range(1, m + 1)]
    centres, weights = _weights_cached(m, min_size)
    found = []
    for _ in range(permutations):
        rng.shuffle(order)
        sums = list(itertools.accumulate(order))[min_size - 1:m - min_size]
        found.append(max(abs(s - c) * w for s, c, w in zip(sums, centres, weights, strict=True)))
    return tuple(sorted(found))


def _p_value(stat: float, null: tuple[float, ...]) -> float:
    # Count of permutations at least as extreme (tiny tolerance: equal sums in float).
    lo, hi = 0, len(null)
    while lo < hi:
        mid = (lo + hi) // 2
        if null[mid] < stat - 1e-9:
            lo = mid + 1
        else:
            hi = mid
    return (1 + len(null) - lo) / (1 + len(null))


def change_points(values: Sequence[float], *, alpha: float = ALPHA, min_size: int = MIN_SIZE,
                  min_change: float = MIN_CHANGE, permutations: int = PERMUTATIONS,
                  seed: int = SEED) -> list[ChangePoint]:
    """The change points of `values` (in time order), earliest first; see the module doc.

    Guarantees: deterministic for a given seed; segments have at least `min_size` values;
    a history shorter than 2 * min_size has none."""
    xs = finite_sample(values, "history")
    if not 0 < alpha < 1 or min_size < 1:
        raise StatisticsInputError("alpha must be in (0, 1) and min_size at least 1")
    found: dict[int, float] = {}
    todo = [(0, len(xs))]
    while todo:
        a, b = todo.pop()
        if b - a < 2 * min_size:
            continue
        ranks = midranks(xs[a:b])
        stat, k = _scan(ranks, min_size)
        k = _refine(ranks, k, min_size)
        p = _p_value(stat, _null(b - a, min_size, _count(b - a, permutations), seed))
        left, right = statistics.median(xs[a:a + k]), statistics.median(xs[a + k:b])
        if p <= alpha and _relative(left, right) >= min_change:
            found[a + k] = p
            todo += [(a, a + k), (a + k, b)]
    cuts = _prune(xs, sorted(found), alpha, min_change)
    cuts = _drift_prune(xs, cuts, alpha, min_size, permutations, seed)
    bounds = [0, *cuts, len(xs)]
    out = []
    for i, cut in enumerate(cuts):
        before = statistics.median(xs[bounds[i]:cut])
        after = statistics.median(xs[cut:bounds[i + 2]])
        out.append(ChangePoint(cut, before, after, _change(before, after), found[cut]))
    return out


def _prune(xs: Sequence[float], cuts: list[int], alpha: float, min_change: float
           ) -> list[int]:
    """Drop change points their neighbours made: each must still separate the segments
    on either side of it (Mann-Whitney p <= alpha, medians min_change apart).

    Binary segmentation splits a dip (a slower stretch that recovers) first somewhere
    inside the normal part; once the dip's own edges are found that first split
    separates two stretches of one level, and goes."""
    def p_values(cuts: list[int]) -> list[float]:
        bounds, out = [0, *cuts, len(xs)], []
        for i, cut in enumerate(cuts):
            left, right = xs[bounds[i]:cut], xs[cut:bounds[i + 2]]
            apart = _relative(statistics.median(left), statistics.median(right)) >= min_change
            out.append(mann_whitney(left, right).p_value if apart else 1.0)
        return out
    return _drop_weakest(cuts, alpha, p_values)


def _drop_weakest(cuts: list[int], alpha: float,
                  p_values: Callable[[list[int]], list[float]]) -> list[int]:
    """`cuts` less, one at a time, the one with the largest p-value above alpha (the
    first of equals), the p-values read again after each, until all stand."""
    while cuts:
        ps = p_values(cuts)
        worst = max(range(len(cuts)), key=ps.__getitem__)
        if ps[worst] <= alpha:
            return cuts
        cuts = cuts[:worst] + cuts[worst + 1:]
    return cuts


def _count(m: int, permutations: int) -> int:
    # Long segments (a history of hundreds of experiments) get fewer permutations: the
    # test stays exact (p = (1 + as extreme) / (1 + permutations)), its p-value coarser,
    # and the null costs O(m) per permutation.
    return permutations if m <= LONG else min(permutations, LONG_PERMUTATIONS)


def drift(values: Sequence[float], cuts: Sequence[int] = ()) -> float:
    """The drift between consecutive experiments: the lag-1 autocorrelation of `values`'
    ranks around the means of the segments `cuts` (0-based starts) makes, corrected
    upwards for its bias and spread in short segments (see the module doc), in [0, 0.95].

    Guarantees: 0 for a history of fewer than 3 values or without spread; pairs across
    a cut are not counted, so a step between segments adds nothing."""
    n = len(values)
    if n < 3:
        return 0.0
    ranks = midranks(values)
    bounds = [0, *cuts, n]
    resid: list[float] = []
    for a, b in itertools.pairwise(bounds):
        mean = sum(ranks[a:b]) / (b - a)
        resid += [r - mean for r in ranks[a:b]]
    total = sum(e * e for e in resid)
    if total == 0:
        return 0.0
    starts = set(cuts)
    phi = sum(resid[i] * resid[i - 1] for i in range(1, n) if i not in starts) / total
    phi += len(bounds[1:]) * (1 + 3 * phi) / n + DRIFT_MARGIN / math.sqrt(n)
    return min(max(phi, 0.0), DRIFT_MAX)


def _drift_prune(xs: Sequence[float], cuts: list[int], alpha: float, min_size: int,
                 permutations: int, seed: int) -> list[int]:
    """The change points that still stand once the drift is allowed for (module doc)."""
    def p_values(cuts: list[int]) -> list[float]:
        phi = drift(xs, cuts)
        if phi == 0:
            return [0.0] * len(cuts)
        factor = math.sqrt((1 + phi) / (1 - phi))
        bounds, out = [0, *cuts, len(xs)], []
        for i in range(len(cuts)):
            a, b = bounds[i], bounds[i + 2]
            stat, _ = _scan(midranks(xs[a:b]), min_size)
            out.append(_p_value(stat / factor,
                                _null(b - a, min_size, _count(b - a, permutations), seed)))
        return out
    return _drop_weakest(cuts, alpha, p_values)


def _refine(ranks: Sequence[float], k: int, min_size: int, reach: int = REACH) -> int:
    """The split near `k` where the ranks' unweighted CUSUM |R_j - j(m+1)/2| peaks.

    The standardised scan is the better test (a change near either end still stands
    out) but its weighting pulls the split towards the ends; the plain CUSUM places a
    change in mid-history more exactly, and ranks keep it robust."""
    m = len(ranks)
    sums = [0.0, *itertools.accumulate(ranks)]
    splits = range(max(min_size, k - reach), min(m - min_size, k + reach) + 1)
    return max(splits, key=lambda j: (abs(sums[j] - j * (m + 1) / 2), -abs(j - k)))


def _change(before: float, after: float) -> float:
    return after / before - 1 if before else math.inf if after else 0.0


def _relative(a: float, b: float) -> float:
    return abs(_change(a, b)) if a else (math.inf if b else 0.0)


def differences(a: Mapping[str, Any], b: Mapping[str, Any],
                ignore: Sequence[str] = ()) -> list[tuple[str, Any, Any]]:
    """The fingerprint fields that differ between `a` and `b` as (key, a's, b's), sorted;
    a key missing on one side counts as a difference (None there). Keys in `ignore`, or
    starting with an `ignore` entry followed by a dot, are left out."""
    def ignored(key: str) -> bool:
        return any(key == i or key.startswith(i + ".") for i in ignore)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
            if not ignored(k) and a.get(k) != b.get(k)]


# -- seeded simulation of the error rates -----------------------------------------------

Noise = Callable[[random.Random, int], list[float]]


def ar1(phi: float) -> Noise:
    """AR(1) noise with unit marginal variance (experiments drifting together)."""
    def make(rng: random.Random, n: int) -> list[float]:
        out, x, scale = [], rng.gauss(0, 1), math.sqrt(1 - phi * phi)
        for _ in range(n):
            out.append(x)
            x = phi * x + scale * rng.gauss(0, 1)
        return out
    return make


def heavy_tails(rng: random.Random, n: int) -> list[float]:
    """Student t with 3 degrees of freedom, scaled to unit variance."""
    return [rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3) / math.sqrt(3)
            for _ in range(n)]


def stalls(rng: random.Random, n: int) -> list[float]:
    """iid noise plus 1-2 experiments that stalled (a third slower), anywhere incl. the
    first and the last."""
    out = [rng.gauss(0, 1) for _ in range(n)]
    for i in rng.sample([0, n - 1, *range(1, n - 1)][:n], rng.choice((1, 2))):
        out[i] -= 11.0  # at CV 3 %: a third of the level
    return out


def busy_host(rng: random.Random, n: int) -> list[float]:
    """iid noise where one experiment in ten ran on a busy host (three times the spread)."""
    return [rng.gauss(0, 1) * (3.0 if rng.random() < 0.1 else 1.0) for _ in range(n)]


@dataclass(frozen=True)
class Rates:
    """Share of simulated histories: a change found within `window` of the step
    (`detected`), any change found in a flat history (`false_alarm`)."""

    detected: float
    false_alarm: float
    trials: int


def simulate_rates(noise: Noise, *, trials: int = 200, n: int = 60, step_at: int = 30,
                   step: float = 0.05, cv: float = 0.03, window: int = 3,
                   seed: int = 1) -> Rates:
    """Seeded error rates of change_points on histories of `n` experiments at `cv`."""
    rng = random.Random(seed)
    hits = alarms = 0
    for _ in range(trials):
        flat = [1000.0 * (1 + cv * e) for e in noise(rng, n)]
        stepped = [1000.0 * (1 + (step if i >= step_at else 0.0) + cv * e)
                   for i, e in enumerate(noise(rng, n))]
        alarms += bool(change_points(flat))
        hits += any(abs(c.index - step_at) <= window for c in change_points(stepped))
    return Rates(hits / trials, alarms / trials, trials)


@dataclass(frozen=True)
class OnlineRates:
    """The same histories watched as they grow (`volbench history` after every experiment).

    `detected_by[k - 1]`: share of stepped histories in which, looking at the history as
    it stood after the k-th experiment past the step (step_at + k values), a change point
    within `window` of the step had been flagged at some look so far (k = 1 ..
    len(detected_by)). `flat_any`: share of flat histories flagged at any look, from
    2 * MIN_SIZE experiments to all of them; `flat_per_look`: the share flagged at one
    look, averaged over the looks; `flat_worst_look`: the largest of those."""

    detected_by: tuple[float, ...]
    flat_any: float
    flat_per_look: float
    flat_worst_look: float
    looks: int
    trials: int

    def within(self, k: int) -> float:
        """Share flagged by the k-th experiment after the step."""
        return self.detected_by[k - 1]


def simulate_online(noise: Noise, *, trials: int = 200, n: int = 60, step_at: int = 30,
                    step: float = 0.05, cv: float = 0.03, window: int = 3, after: int = 10,
                    seed: int = 1) -> OnlineRates:
    """Seeded online rates of change_points (OnlineRates), on the very histories
    simulate_rates draws with the same arguments: each history's prefixes are read as
    the history stood after each experiment."""
    rng = random.Random(seed)
    first = [0] * (after + 1)  # first[k]: stepped histories first flagged at look k
    looks = range(2 * MIN_SIZE, n + 1)
    flagged_at = [0] * len(looks)
    any_flat = 0
    for _ in range(trials):
        flat = [1000.0 * (1 + cv * e) for e in noise(rng, n)]
        stepped = [1000.0 * (1 + (step if i >= step_at else 0.0) + cv * e)
                   for i, e in enumerate(noise(rng, n))]
        seen = [bool(change_points(flat[:m])) for m in looks]
        any_flat += any(seen)
        flagged_at = [a + b for a, b in zip(flagged_at, seen, strict=True)]
        for k in range(1, min(after, n - step_at) + 1):
            found = change_points(stepped[:step_at + k])
            if any(abs(c.index - step_at) <= window for c in found):
                first[k] += 1
                break
    by = tuple(itertools.accumulate(first[1:]))
    per_look = [f / trials for f in flagged_at]
    return OnlineRates(tuple(c / trials for c in by), any_flat / trials,
                       statistics.fmean(per_look), max(per_look), len(looks), trials)
