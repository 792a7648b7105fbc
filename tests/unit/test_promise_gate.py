"""Runs needed at CV 20 %: a number kept in >= 80 % of cases, or no number (seeded)."""

from __future__ import annotations

import pytest

from volbench.stats import compare
from volbench.stats.simulate import promise_rates


@pytest.mark.slow
def test_identical_targets_at_cv_20_percent_get_no_number_they_would_not_keep() -> None:
    trials = 200
    found = promise_rates(seed=7, trials=trials, cv=0.20, ratio=1.0, start=3, old=False,
                          cap=1000)
    # Before the gate: ~5 % of cases got a number, kept in a quarter of them.
    assert found.cases <= trials // 100 or found.rate >= 0.8


def test_a_quiet_looking_start_of_a_noisy_pair_is_not_promised_a_number() -> None:
    # Three runs a side at CV ~3 %, threshold 0.7 %: 325 runs per side at the observed
    # spread, ~790 at its upper 80 % bound (2.4x the variance for 4 df), but ~1830 at
    # the 95 % bound (5.6x): not promised.
    c = compare([100.0, 103.0, 97.5], [101.0, 98.0, 104.0], higher_is_better=True,
                threshold=0.007)
    assert c.runs_needed_capped and c.runs_needed_low == 325


@pytest.mark.parametrize(("cv", "ratio", "start"), [
    (0.10, 1.0, 3), (0.20, 1.0, 3), (0.20, 1.05, 3), (0.05, 1.0, 3)])
def test_a_printed_number_of_runs_decides_or_none_is_printed(cv: float, ratio: float,
                                                             start: int) -> None:
    # Issue 32: with the number at the spread's 80 % bound and a gate at 95 %, identical
    # targets at CV 10 % from 3 runs kept a printed number in 50 % of cases, at CV 20 % in
    # 1-12 %. Now number and gate share the 99.9 % bound: a wrong number comes in at most
    # ~0.1 % of undecided experiments, and where numbers are common >= 80 % are kept.
    # bench/claims.py --promise runs the grid (CV 5-30 %, identical and +5 %, 3 and 5 runs).
    trials = 200
    found = promise_rates(seed=int(cv * 1000) + start, trials=trials, cv=cv, ratio=ratio,
                          start=start, old=False, cap=1000)
    wrong = found.cases - found.kept
    assert wrong <= max(0.2 * found.cases, 0.02 * trials)


def test_three_quiet_looking_runs_of_a_noisy_pair_get_no_number() -> None:
    # Drawn from identical targets at CV 20 % (seeded): by chance their first runs look
    # quiet (CV ~4 %). Before issue 32 they were promised 160 runs per side, and 160 runs
    # of the real spread did not decide.
    c = compare([998.9, 1028.7, 1083.7], [1016.8, 1023.9, 979.6], higher_is_better=True)
    assert c.runs_needed_capped and c.runs_needed_low is not None
