"""Rank-based tests: Mann-Whitney U (two groups) and Spearman's rho (trend)."""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.distributions import normal_sf, t_two_sided_p
from volbench.stats.spearman_null import COUNTS as SPEARMAN_COUNTS
from volbench.stats.validation import StatisticsInputError, finite_sample

# R's wilcox.test computes the exact distribution while both groups have fewer than 50
# values and there are no ties; we follow that rule.
EXACT_MANN_WHITNEY_MAX = 49
# Spearman's exact permutation test enumerates n! orderings: 8! = 40 320 stays fast.
EXACT_SPEARMAN_MAX = 8
# Up to 12 untied values the exact null comes from a precomputed table (spearman_null.py):
# the t approximation's "p < 0.05" has size 5.89 % at n = 9 and 5.44 % at n = 10.
EXACT_SPEARMAN_TABLE_MAX = 12


def midranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they occupy."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    if len(set(values)) == len(values):  # no ties (measurements usually have none)
        for rank, index in enumerate(order, 1):
            ranks[index] = float(rank)
        return ranks
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2.0 + 1.0
        for position in range(start, end + 1):
            ranks[order[position]] = shared
        start = end + 1
    return ranks


@dataclass(frozen=True)
class MannWhitney:
    """Mann-Whitney U of the first group (count of pairs where it is larger, ties ½)."""

    u: float
    p_value: float
    exact: bool


@functools.lru_cache(maxsize=1024)
def _exact_u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of orderings giving U = 0..m·n, for groups of m and n without ties.

    The generating function of U is the Gaussian binomial coefficient
    [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) (Andrews, *The Theory of
    Partitions*, 1976, Thm 3.1); each factor is one O(m·n) pass over integer coefficients.
    """
    size = m * n
    coefficients = [1] + [0] * size
    for i in range(1, m + 1):
        step = n + i
        for k in range(size, step - 1, -1):  # multiply by (1 - q^step)
            coefficients[k] -= coefficients[k - step]
        for k in range(i, size + 1):  # divide by (1 - q^i): a running sum with stride i
            coefficients[k] += coefficients[k - i]
    return tuple(coefficients)  # cached: immutable


def mann_whitney(first: Sequence[float], second: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test (Mann & Whitney 1947).

    Exact p-value from the permutation distribution when there are no ties and both groups
    have fewer than 50 values; otherwise the normal approximation with tie-corrected
    variance and a continuity correction of 1/2 (as in R's wilcox.test).
    """
    a = finite_sample(first, "first group")
    b = finite_sample(second, "second group")
    m, n = len(a), len(b)
    ranks = midranks(a + b)
    u = sum(ranks[:m]) - m * (m + 1) / 2.0
    ties = [count for count in Counter(a + b).values() if count > 1]
    if not ties and m <= EXACT_MANN_WHITNEY_MAX and n <= EXACT_MANN_WHITNEY_MAX:
        counts = _exact_u_counts(m, n)
        total = math.comb(m + n, m)
        observed = round(u)
        lower = sum(counts[: observed + 1])
        upper = sum(counts[observed:])
        return MannWhitney(u, min(1.0, 2.0 * min(lower, upper) / total), exact=True)
    big_n = m + n
    tie_term = sum(t**3 - t for t in ties) / (big_n * (big_n - 1))
    variance = m * n / 12.0 * ((big_n + 1) - tie_term)
    if variance <= 0.0:  # every value identical: no evidence of any difference
        return MannWhitney(u, 1.0, exact=False)
    distance = max(0.0, abs(u - m * n / 2.0) - 0.5)
    return MannWhitney(u, min(1.0, 2.0 * normal_sf(distance / math.sqrt(variance))), exact=False)


@dataclass(frozen=True)
class Spearman:
    """Spearman's rank correlation between two paired sequences, two-sided p-value."""

    rho: float
    p_value: float
    exact: bool


def _pearson(x: Sequence[float], y: Sequence[float]) -> float:
    mean_x, mean_y = math.fsum(x) / len(x), math.fsum(y) / len(y)
    sxy = math.fsum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
    sxx = math.fsum((a - mean_x) ** 2 for a in x)
    syy = math.fsum((b - mean_y) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0.0 and syy > 0.0 else 0.0


def _exact_spearman_p(rank_x: Sequence[float], rank_y: Sequence[float]) -> float:
    """Share of all orderings of rank_y whose |rho| reaches the observed one.

    rho is an increasing affine function of S = sum(rank_x·rank_y) for every ordering
    (the rank sums and sums of squares do not change), so S is compared instead. Ranks
    are doubled to integers so ties compare exactly.
    """
    xs = [round(2 * r) for r in rank_x]
    ys = [round(2 * r) for r in rank_y]
    centre2 = sum(xs) * sum(ys)  # n·E[S] scaled, kept in integers as n·S - centre2
    n = len(xs)
    observed = abs(n * sum(a * b for a, b in zip(xs, ys, strict=True)) - centre2)
    hits = total = 0
    for permutation in itertools.permutations(ys):
        total += 1
        s = sum(a * b for a, b in zip(xs, permutation, strict=True))
        if abs(n * s - centre2) >= observed:
            hits += 1
    return hits / total


def count_rank_products(n: int) -> tuple[int, tuple[int, ...]]:
    """Null distribution of S = sum_i i·sigma(i) over all orderings sigma of 1..n.

    Returns (smallest S, counts of S = smallest, smallest + 1, …); the counts add up to
    n!. A dynamic programme over the set of ranks already placed (2^n sets) instead of n!
    orderings: it generated spearman_null.py, and the tests check that table with it.
    """
    if n < 1:
        raise StatisticsInputError(f"count_rank_products needs n >= 1, got {n}")
    layer: dict[int, Counter[int]] = {0: Counter({0: 1})}
    for position in range(1, n + 1):
        following: dict[int, Counter[int]] = {}
        for used, sums in layer.items():
            for rank in range(n):
                if used >> rank & 1:
                    continue
                target = following.setdefault(used | 1 << rank, Counter())
                step = position * (rank + 1)
                for total, count in sums.items():
                    target[total + step] += count
        layer = following
    (final,) = layer.values()
    low, high = min(final), max(final)
    return low, tuple(final[s] for s in range(low, high + 1))


def _table_spearman_p(rank_x: Sequence[float], rank_y: Sequence[float]) -> float:
    """Exact two-sided p for untied ranks from the precomputed null of S (9 <= n <= 12).

    The null of S is symmetric about n(n+1)²/4; in integers, |4S - n(n+1)²| is compared.
    """
    n = len(rank_x)
    low, counts = SPEARMAN_COUNTS[n]
    centre = n * (n + 1) ** 2
    observed = round(sum(a * b for a, b in zip(rank_x, rank_y, strict=True)))
    distance = abs(4 * observed - centre)
    hits = sum(c for offset, c in enumerate(counts) if abs(4 * (low + offset) - centre) >= distance)
    return hits / math.factorial(n)


def spearman(x: Sequence[float], y: Sequence[float]) -> Spearman:
    """Spearman's rho (Pearson correlation of mid-ranks) with a two-sided p-value.

    Exact permutation p-value for n <= 8 (ties included, conditional on them) and for
    9 <= n <= 12 without ties (precomputed null, spearman_null.py); otherwise the t
    approximation t = rho·sqrt((n-2)/(1-rho²)) with n-2 degrees of freedom (Zar,
    *Biostatistical Analysis*, 5th ed., 2010, ch. 19). A constant sequence or n < 2
    has no ordering to correlate: rho = 0, p = 1.
    """
    xs = finite_sample(x, "x")
    ys = finite_sample(y, "y")
    if len(xs) != len(ys):
        raise StatisticsInputError(
            f"spearman needs paired values, got {len(xs)} x and {len(ys)} y values"
        )
    n = len(xs)
    if n < 2:
        return Spearman(0.0, 1.0, exact=True)
    rank_x, rank_y = midranks(xs), midranks(ys)
    rho = max(-1.0, min(1.0, _pearson(rank_x, rank_y)))
    if rho == 0.0 and (len(set(xs)) == 1 or len(set(ys)) == 1):
        return Spearman(0.0, 1.0, exact=True)
    if n <= EXACT_SPEARMAN_MAX:
        return Spearman(rho, _exact_spearman_p(rank_x, rank_y), exact=True)
    untied = len(set(xs)) == n and len(set(ys)) == n
    if n <= EXACT_SPEARMAN_TABLE_MAX and untied:
        return Spearman(rho, _table_spearman_p(rank_x, rank_y), exact=True)
    if abs(rho) >= 1.0:
        return Spearman(rho, 0.0, exact=False)
    t = rho * math.sqrt((n - 2) / (1.0 - rho * rho))
    return Spearman(rho, t_two_sided_p(t, n - 2), exact=False)
