"""Seeded calibration of the error rates the report promises (fast: a few seconds).

bench/calibration.py runs the same simulations larger and prints the tables in
docs/statistics.md. Bounds are the target plus about 2.5 Monte-Carlo standard errors;
the old rules break the bounds (shown next to each), so the tests catch a regression.
"""

from __future__ import annotations

import math
import random

import pytest

from volbench.stats import (
    SequentialDesign,
    Verdict,
    drift,
    outliers_calibrated,
    outliers_mad,
    smallest_drift_p,
)
from volbench.stats.outliers import outlier_cutoff
from volbench.stats.ranks import spearman
from volbench.stats.simulate import paired_rates, promise_rates, verdict_rates

# Seeded simulations of error rates: CI runs them, `scripts/test --quick` leaves them out.
pytestmark = pytest.mark.slow

TRIALS = 400
BOUND = 0.05 + 2.5 * (0.05 * 0.95 / TRIALS) ** 0.5  # 7.7 %


@pytest.mark.parametrize("cv", [0.02, 0.05])
def test_adaptive_repetition_calls_identical_targets_different_at_most_5_percent(
    cv: float,
) -> None:
    design = SequentialDesign(3, 10)
    new = verdict_rates(seed=11, trials=TRIALS, cv=cv, ratio=1.0, first=3, last=10,
                        design=design)
    old = verdict_rates(seed=11, trials=TRIALS, cv=cv, ratio=1.0, first=3, last=10,
                        design=None)
    assert new.different <= BOUND
    assert old.different > BOUND  # testing at 5 % after every round: ~12 %


def test_adaptive_equivalence_at_the_thresholds_edge_at_most_5_percent() -> None:
    rates = verdict_rates(seed=12, trials=TRIALS, cv=0.01, ratio=1.02, first=3, last=10,
                          design=SequentialDesign(3, 10))
    assert rates.share(Verdict.EQUIVALENT) <= BOUND


OUTLIER_CASES = 2000
OUTLIER_BOUND = 0.05 + 2.5 * (0.05 * 0.95 / OUTLIER_CASES) ** 0.5  # 6.2 %


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 10, 20, 35, 50, 80])
def test_outlier_flags_on_clean_normal_cases_at_most_5_percent(n: int) -> None:
    rng = random.Random(1000 + n)
    flagged = sum(bool(outliers_calibrated([rng.gauss(100.0, 5.0) for _ in range(n)]))
                  for _ in range(OUTLIER_CASES))
    assert flagged / OUTLIER_CASES <= OUTLIER_BOUND


@pytest.mark.parametrize("n", [10, 20, 50, 80])
@pytest.mark.parametrize("cv", [0.05, 0.2])
def test_outlier_flags_on_clean_skewed_cases_at_most_5_percent(n: int, cv: float) -> None:
    """Lognormal runs (right-skewed, like latencies): the raw-scale rule alone flagged
    10 % of them at 20 runs and CV 20 %, 19 % at 80."""
    rng = random.Random(2000 + n)
    sigma = math.sqrt(math.log1p(cv * cv))
    cases = [[100.0 * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]
             for _ in range(OUTLIER_CASES)]
    assert sum(bool(outliers_calibrated(c, min_relative=0.01)) for c in cases) \
        / OUTLIER_CASES <= OUTLIER_BOUND
    if cv == 0.2 and n >= 20:  # what the second scale is for
        raw = sum(bool(outliers_mad(c, threshold=outlier_cutoff(n), min_relative=0.01))
                  for c in cases) / OUTLIER_CASES
        assert raw > OUTLIER_BOUND


@pytest.mark.parametrize("n", [10, 20, 50])
def test_wide_normal_cases_stay_within_5_percent_too(n: int) -> None:
    rng = random.Random(3000 + n)
    cases = [[rng.gauss(100.0, 20.0) for _ in range(n)] for _ in range(OUTLIER_CASES)]
    assert sum(bool(outliers_calibrated(c, min_relative=0.01)) for c in cases) \
        / OUTLIER_CASES <= OUTLIER_BOUND


def test_a_stalled_or_doubled_run_is_still_flagged() -> None:
    rng = random.Random(4)
    for factor in (0.5, 2.0):
        hits = 0
        for _ in range(200):
            values = [rng.gauss(100.0, 5.0) for _ in range(10)]
            values[3] = 100.0 * factor
            hits += 3 in outliers_calibrated(values, min_relative=0.01)
        assert hits >= 190, factor


def test_the_fixed_35_cut_off_breaks_that_bound() -> None:
    rng = random.Random(3)
    samples = [[rng.gauss(100.0, 5.0) for _ in range(3)] for _ in range(OUTLIER_CASES)]
    assert sum(bool(outliers_mad(s)) for s in samples) / OUTLIER_CASES > 0.2  # ~28 %


def test_drift_is_testable_from_five_runs() -> None:
    assert smallest_drift_p([1.0, 2.0, 3.0]) == pytest.approx(1 / 3)
    assert smallest_drift_p([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1 / 12)
    assert smallest_drift_p([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(1 / 60)
    assert not drift([1.0, 2.0, 3.0, 4.0]).testable
    assert drift([1.0, 2.0, 3.0, 4.0, 5.0]).testable
    assert not drift([1.0, 1.0, 1.0, 1.0, 2.0]).testable  # ties: p >= 0.2 for any order


def test_runs_needed_promise_is_kept_in_80_percent_of_cases() -> None:
    # Identical targets at CV 2 %, 5 runs per side, inconclusive: run to the promised n.
    new = promise_rates(seed=21, trials=60, cv=0.02, ratio=1.0, start=5, old=False)
    old = promise_rates(seed=21, trials=60, cv=0.02, ratio=1.0, start=5, old=True)
    # At the spread's 99.9 % bound (issue 32) 38 of these 60 get a number within the
    # bench's cap of 300, all kept.
    assert new.cases >= 30 and new.rate >= 0.8
    assert old.rate < 0.8  # the observed effect and spread plugged in: ~65 %


@pytest.mark.parametrize("drift", [0.0, 0.03])
def test_independent_samples_keep_5_percent_with_iid_and_drifting_noise(drift: float) -> None:
    # 10 interleaved rounds, 2 % run noise; drift: a random walk of the machine's state
    # shared by both targets' runs of a round. Welch stays valid (conservative under
    # drift), the paired analysis keeps its 5 % too and its power.
    welch, paired = paired_rates(seed=31, trials=TRIALS, n=10, ratio=1.0, noise=0.02,
                                 drift=drift)
    assert welch.different <= BOUND and paired.different <= BOUND
    if drift:
        assert welch.different < 0.02  # drift counted as noise: conservative
        power_w, power_p = paired_rates(seed=32, trials=TRIALS, n=10, ratio=1.03,
                                        noise=0.02, drift=drift)
        assert power_p.different > power_w.different + 0.3


def test_the_smallest_drift_p_of_untied_values_is_that_of_their_ranks() -> None:
    # smallest_drift_p answers untied values from a cache by count: it must be the
    # p-value Spearman gives their sorted order, tied or not.
    rng = random.Random(12)
    for n in range(2, 30):
        values = [rng.random() for _ in range(n)]
        tied = [values[0], *values[:-1]]
        for sample in (values, tied):
            order = [float(i) for i in range(n)]
            expected = spearman(order, sorted(sample)).p_value if len(set(sample)) > 1 else 1.0
            assert smallest_drift_p(sample) == expected, (n, sample)
