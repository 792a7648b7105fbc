"""Error rates of the burst/warm-up detector on realistic noise (issue 21's goals), seeded.

bench/changepoint_rates.py runs the same cells with 1000 series each, old method beside
new (docs/time.md). Here fewer series: the bounds leave room for Monte-Carlo error
(~1.5 points at 300 series and 3 %) and still fail the old method by far (it flagged
60 % of flat AR(1) 0.9 series and 15-22 % of flat series with stalls near the ends).
"""

from __future__ import annotations

import pytest

from volbench.stats.changepoint import regimes
from volbench.stats.seriessim import Noise, regime_rates

# Seeded simulations of error rates: CI runs them, `scripts/test --quick` leaves them out.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("noise", [Noise(0.15), Noise(0.15, 0.5), Noise(0.15, 0.9),
                                   Noise(0.10, 0.9, heavy=True), Noise(0.05, stalls=2),
                                   Noise(0.15, 0.9, stalls=2)], ids=lambda n: n.label)
def test_flat_runs_of_60_s_are_rarely_called_bursty(noise: Noise) -> None:
    rates = regime_rates(regimes, seed=21, trials=250, noise=noise, seconds=60)
    assert rates.false_flags <= 0.075


def test_flat_runs_of_300_s_with_wandering_noise() -> None:
    rates = regime_rates(regimes, seed=22, trials=60, noise=Noise(0.15, 0.9, stalls=2),
                         seconds=300)
    assert rates.false_flags <= 0.05


@pytest.mark.parametrize("noise", [Noise(0.05), Noise(0.05, 0.5)], ids=lambda n: n.label)
def test_a_2x_burst_of_20_s_is_found_with_both_levels(noise: Noise) -> None:
    rates = regime_rates(regimes, seed=23, trials=200, noise=noise, seconds=60)
    assert rates.found >= 0.95 and rates.levels_right >= 0.95
