"""How often a stack loses acknowledged data to a power cut, with its uncertainty.

Each cut is a trial: it lost acknowledged writes (or commits, or the stack did not come
back) or it did not. k losing cuts of n bound the true share p of cuts that lose data
by the Clopper-Pearson interval (Clopper & Pearson, Biometrika 26, 1934): the p at
which seeing k or fewer (more) losses has probability alpha, read from the binomial's
relation to the beta distribution, P(X <= k) = I_{1-p}(n - k, k + 1). With k = 0 the
one-sided 95 % upper bound is 1 - 0.05**(1/n): 13.9 % for 20 cuts, 5.8 % for 50.

It is exact (never below its stated coverage) for independent cuts with one p. The
lab's cuts come at seeded random moments and each starts from a recovered stack, which
is what makes them close to independent; stats/durability_sim.py measures what happens
to the coverage when they are not (outcomes that come in runs).
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.distributions import regularized_incomplete_beta
from volbench.stats.validation import StatisticsInputError

CONFIDENCE = 0.95
_ITERATIONS = 80  # bisection steps: far below 1e-12 of width


def _check(k: int, n: int) -> None:
    if n < 1 or not 0 <= k <= n:
        raise StatisticsInputError(f"k losses of n cuts needs 0 <= k <= n and n >= 1; "
                                   f"got k={k}, n={n}")


def _cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return regularized_incomplete_beta(1.0 - p, n - k, k + 1)


def _solve(target: float, k: int, n: int) -> float:
    """The p at which P(X <= k) = target (P falls as p rises)."""
    lo, hi = 0.0, 1.0
    for _ in range(_ITERATIONS):
        mid = (lo + hi) / 2
        if _cdf(k, n, mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@functools.lru_cache(maxsize=4096)
def upper_bound(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided upper bound on the share of cuts that lose data, after k of n did."""
    _check(k, n)
    if k == n:
        return 1.0
    return _solve(1.0 - confidence, k, n)


@functools.lru_cache(maxsize=4096)
def lower_bound(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided lower bound: the p at which P(X >= k) = 1 - confidence."""
    _check(k, n)
    if k == 0:
        return 0.0
    return _solve(confidence, k - 1, n)


def interval(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval (each tail (1 - confidence) / 2)."""
    tail = (1.0 - confidence) / 2
    return lower_bound(k, n, 1.0 - tail), upper_bound(k, n, 1.0 - tail)


def exact_coverage(p: float, n: int, confidence: float = CONFIDENCE) -> float:
    """The upper bound's coverage at share p for n independent cuts, summed exactly over
    every k: P(upper_bound(K, n) >= p) with K ~ Binomial(n, p)."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k)
               for k in range(n + 1) if upper_bound(k, n, confidence) >= p)


@dataclass(frozen=True)
class Verdict:
    """A case's cuts summed up: how many, how many lost, how much, and the bounds."""

    cuts: int
    # Cuts that lost data: lost acknowledged writes or commits, or did not recover.
    losing: int
    failed_recoveries: int
    # Cuts that lost at least one acknowledged write or commit.
    with_losses: int
    # Lost acknowledged writes (or commits) in the cuts that lost some.
    median_lost: float | None
    max_lost: int | None
    upper: float
    low: float
    high: float

    @property
    def lost_nothing(self) -> bool:
        """No cut lost acknowledged data, and every one recovered."""
        return self.losing == 0


def verdict(lost: Sequence[int], recovered: Sequence[bool],
            confidence: float = CONFIDENCE) -> Verdict:
    """`lost[i]`: acknowledged writes or commits cut i lost; `recovered[i]`: whether the
    stack came back at all. A cut loses data if it lost any, or did not recover."""
    if len(lost) != len(recovered):
        raise StatisticsInputError("one loss count and one recovery flag per cut")
    n = len(lost)
    _check(0, n)
    losing = [x for x, ok in zip(lost, recovered, strict=True) if x > 0 or not ok]
    counts = [x for x in lost if x > 0]
    low, high = interval(len(losing), n, confidence)
    return Verdict(n, len(losing), sum(1 for ok in recovered if not ok), len(counts),
                   statistics.median(counts) if counts else None,
                   max(counts) if counts else None,
                   upper_bound(len(losing), n, confidence), low, high)


def streak_p(outcomes: Sequence[bool]) -> float | None:
    """How likely so few runs of alike outcomes (losing / not losing cuts, in order) are
    if the cuts are independent: the exact one-sided Wald-Wolfowitz runs test, P(R <= r)
    given the counts. None when every cut went the same way (nothing to test). A small
    value says losses come in streaks, and the bound above (which assumes independent
    cuts) claims too much: docs/durability.md."""
    ones = sum(1 for o in outcomes if o)
    zeros = len(outcomes) - ones
    if ones == 0 or zeros == 0:
        return None
    runs = 1 + sum(1 for a, b in itertools.pairwise(outcomes) if a != b)
    total = math.comb(ones + zeros, ones)

    def exactly(r: int) -> int:
        k, odd = divmod(r, 2)
        if not odd:
            return 2 * math.comb(ones - 1, k - 1) * math.comb(zeros - 1, k - 1)
        return (math.comb(ones - 1, k - 1) * math.comb(zeros - 1, k)
                + math.comb(ones - 1, k) * math.comb(zeros - 1, k - 1))

    return sum(exactly(r) for r in range(2, runs + 1)) / total
