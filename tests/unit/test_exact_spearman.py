"""Spearman's exact null up to 12 values: the precomputed table and the size of drift()."""

from __future__ import annotations

import math
import random

import pytest

from volbench.stats import drift, spearman
from volbench.stats.ranks import count_rank_products
from volbench.stats.spearman_null import COUNTS


@pytest.mark.parametrize("n", [9, 10, 11])
def test_the_table_is_the_dynamic_programmes_output(n: int) -> None:
    assert COUNTS[n] == count_rank_products(n)
    assert sum(COUNTS[n][1]) == math.factorial(n)


def test_the_dynamic_programme_matches_enumeration_for_small_n() -> None:
    low, counts = count_rank_products(4)
    assert (low, sum(counts)) == (20, 24)  # S from 1·4+2·3+3·2+4·1 = 20 up to 30
    assert counts == (1, 3, 1, 4, 2, 2, 2, 4, 1, 3, 1)


@pytest.mark.slow
@pytest.mark.parametrize("n", [9, 10, 11, 12])
def test_exact_size_of_p_below_5_percent_is_at_most_5_percent(n: int) -> None:
    # Each S value's p as spearman() reports it, for an ordering built to have that S:
    # swapping the values of neighbouring positions i, i+1 changes S by their difference.
    low, counts = COUNTS[n]
    index = [float(i) for i in range(n)]
    order = list(range(1, n + 1))  # largest S; bubble towards the reverse, one step at a time
    seen: dict[int, float] = {}
    for _ in range(n * n):
        total = sum((i + 1) * v for i, v in enumerate(order))
        seen.setdefault(total, spearman(index, [float(v) for v in order]).p_value)
        for i in range(n - 1):
            if order[i] < order[i + 1]:
                order[i], order[i + 1] = order[i + 1], order[i]
                break
    centre = n * (n + 1) ** 2 / 4
    rejecting = [s for s, p in seen.items() if p < 0.05 and s > centre]
    assert rejecting, "the walk must reach the rejection region"
    edge = min(rejecting)  # upper tail: every S at or above the edge rejects
    assert all(p < 0.05 for s, p in seen.items() if s >= edge)
    upper = sum(c for offset, c in enumerate(counts) if low + offset >= edge)
    assert 2 * upper / math.factorial(n) <= 0.05  # the null is symmetric


def test_exact_p_at_a_published_critical_value() -> None:
    # Zar (2010) table B.20: n = 10, two-sided 0.05 needs |rho| >= 0.648, which is
    # sum d² = 58; the next value down (sum d² = 60, rho 0.636) is not significant.
    index = [float(i) for i in range(10)]
    at = spearman(index, [4, 0, 1, 3, 5, 6, 7, 8, 2, 9])
    below = spearman(index, [3, 0, 1, 9, 2, 5, 4, 6, 8, 7])
    assert at.rho == pytest.approx(1 - 6 * 58 / 990)
    assert below.rho == pytest.approx(1 - 6 * 60 / 990)
    assert at.p_value < 0.05 < below.p_value
    assert at.exact and below.exact


def test_ties_above_eight_values_fall_back_to_the_t_approximation() -> None:
    assert not spearman([float(i) for i in range(10)], [1, 2, 2, 3, 4, 5, 6, 7, 8, 9]).exact


@pytest.mark.slow
def test_drift_keeps_its_5_percent_on_iid_series_of_9_to_12_runs() -> None:
    rng = random.Random(21)
    for n in (9, 10, 12):
        trials = 6000
        small_p = sum(
            spearman([float(i) for i in range(n)], [rng.gauss(0, 1) for _ in range(n)]).p_value
            < 0.05 for _ in range(trials))
        assert small_p / trials <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials)
    flagged = sum(drift([rng.gauss(100, 5) for _ in range(10)]).flagged for _ in range(3000))
    assert flagged / 3000 <= 0.05
