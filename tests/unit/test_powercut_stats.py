"""The durability bounds: Clopper-Pearson, checked against exact values and by simulation."""

from __future__ import annotations

import itertools
import random

import pytest

from volbench.stats.durability import (
    exact_coverage,
    interval,
    lower_bound,
    streak_p,
    upper_bound,
    verdict,
)
from volbench.stats.durability_sim import coverage, outcomes
from volbench.stats.validation import StatisticsInputError


@pytest.mark.parametrize("n", [1, 5, 20, 50, 200])
def test_no_loss_bound_is_the_closed_form(n: int) -> None:
    assert upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), abs=1e-9)


def test_twenty_cuts_without_loss_bound_the_share_at_13_9_percent() -> None:
    assert round(upper_bound(0, 20) * 100, 1) == 13.9


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    # Published two-sided 95 % Clopper-Pearson limits (e.g. R's binom.test).
    (7, 20, 0.1539092, 0.5921885), (1, 10, 0.0025286, 0.4450161),
    (10, 10, 0.6915029, 1.0), (0, 10, 0.0, 0.3084971)])
def test_two_sided_interval_matches_published_limits(k: int, n: int, low: float,
                                                     high: float) -> None:
    found = interval(k, n)
    assert found[0] == pytest.approx(low, abs=1e-6)
    assert found[1] == pytest.approx(high, abs=1e-6)


def test_bounds_bracket_the_observed_share() -> None:
    for n in (3, 20, 60):
        for k in range(n + 1):
            assert lower_bound(k, n) <= k / n <= upper_bound(k, n)


def test_exact_coverage_of_the_upper_bound_is_at_least_95_percent() -> None:
    worst = min(exact_coverage(p / 100, n) for n in (5, 10, 20, 30, 50)
                for p in range(1, 100))
    assert worst >= 0.95


def test_seeded_simulation_agrees_for_independent_cuts() -> None:
    found = coverage(0.2, 20, trials=1500, seed=7)
    assert found.upper >= 0.94  # 95 % less two Monte-Carlo standard errors
    assert found.two_sided >= 0.94


def test_simulation_shows_what_streaks_do_to_the_bound() -> None:
    # Outcomes that persist (lag-1 correlation 0.8) make 20 cuts worth fewer: the bound
    # no longer holds its 95 %. docs/durability.md states the independence it assumes.
    assert coverage(0.2, 20, trials=1500, seed=7, kind="runs", rho=0.8).upper < 0.85


def test_markov_outcomes_keep_their_long_run_share() -> None:
    rng = random.Random(3)
    draws = outcomes(0.3, 20000, rng, kind="runs", rho=0.6)
    assert sum(draws) / len(draws) == pytest.approx(0.3, abs=0.02)
    same = sum(a == b for a, b in itertools.pairwise(draws)) / (len(draws) - 1)
    assert same > 0.75  # persistence: iid at 0.3 would give 0.58


def test_verdict_counts_losing_cuts_and_failed_recoveries() -> None:
    found = verdict([0, 3, 0, 7, 0], [True, True, False, True, True])
    assert (found.cuts, found.losing, found.failed_recoveries) == (5, 3, 1)
    assert found.median_lost == 5 and found.max_lost == 7
    assert not found.lost_nothing
    clean = verdict([0] * 20, [True] * 20)
    assert clean.lost_nothing and clean.upper == pytest.approx(upper_bound(0, 20))


def test_bad_counts_are_refused() -> None:
    with pytest.raises(StatisticsInputError):
        upper_bound(3, 2)
    with pytest.raises(StatisticsInputError):
        verdict([], [])


def test_runs_test_finds_streaks_and_not_alternation() -> None:
    assert streak_p([False] * 10 + [True] * 10) < 1e-4  # two runs of 20: a streak
    assert streak_p([True, False] * 10) == 1.0
    assert streak_p([True, True, True, False, False, False, False]) == pytest.approx(2 / 35)
    assert streak_p([False] * 20) is None  # nothing to test


def test_runs_test_keeps_its_level_on_independent_cuts() -> None:
    rng = random.Random(11)
    flagged = tested = 0
    for _ in range(3000):
        seq = [rng.random() < 0.3 for _ in range(20)]
        p = streak_p(seq)
        if p is not None:
            tested += 1
            flagged += p < 0.05
    assert flagged / tested <= 0.05  # exact test: at or below its level (discrete)
