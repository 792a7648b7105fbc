"""Seeded calibration of the error rates the report promises (fast: a few seconds).

bench/calibration.py runs the same simulations larger and prints the tables in
docs/statistics.md. Bounds are the target plus about 2.5 Monte-Carlo standard errors;
each test also shows that the old rule breaks the bound, so it would catch a regression.
"""

from __future__ import annotations

import pytest

from volbench.stats import SequentialDesign, Verdict
from volbench.stats.simulate import verdict_rates

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
