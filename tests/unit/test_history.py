"""Issue 24: change points over a history (stats/history.py), with its seeded error rates."""

from __future__ import annotations

import random

import pytest

from volbench.stats import history
from volbench.stats.validation import StatisticsInputError


def gauss(rng: random.Random, n: int) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(n)]


@pytest.mark.parametrize("noise", [gauss, history.heavy_tails, history.stalls],
                         ids=["iid", "student-t3", "stalls"])
def test_a_5_percent_step_at_cv_3_percent_is_found_and_flat_histories_are_not(
        noise: history.Noise) -> None:
    rates = history.simulate_rates(noise, trials=200, seed=7)
    assert rates.detected >= 0.90, rates
    assert rates.false_alarm <= 0.05, rates


def test_autocorrelated_histories_are_flagged_more_often_than_alpha() -> None:
    # Documented limit (docs/store.md): experiments that drift together are not
    # exchangeable, and the permutation test then over-reports. This test pins the size.
    rates = history.simulate_rates(history.ar1(0.9), trials=100, seed=7)
    assert rates.false_alarm > 0.3


def test_two_steps_are_both_found_with_their_levels() -> None:
    rng = random.Random(3)
    values = [100 * (1 + 0.01 * rng.gauss(0, 1)) * (0.8 if 20 <= i < 40 else 1.0)
              for i in range(60)]
    found = history.change_points(values)
    assert [c.index for c in found] == [20, 40]
    assert found[0].change == pytest.approx(-0.2, abs=0.02)
    assert found[1].after == pytest.approx(100, rel=0.02) and found[1].p_value <= 0.01


def test_short_or_tiny_changes_are_not_change_points() -> None:
    assert history.change_points([1.0, 2.0, 3.0, 4.0, 5.0]) == []
    rng = random.Random(4)
    tiny = [1000 * (1 + 1e-4 * rng.gauss(0, 1)) + (0.5 if i >= 30 else 0) for i in range(60)]
    assert history.change_points(tiny) == []  # significant, but under min_change (1 %)
    with pytest.raises(StatisticsInputError):
        history.change_points([1.0, float("nan")])


def test_fingerprint_differences_name_each_field_and_honour_ignores() -> None:
    a = {"host.kernel": "6.1", "cpu.governor": "performance", "tool.fio": "fio-3.33"}
    b = {"host.kernel": "6.12", "cpu.governor": "performance", "device0.model": "X"}
    assert history.differences(a, b) == [("device0.model", None, "X"),
                                         ("host.kernel", "6.1", "6.12"),
                                         ("tool.fio", "fio-3.33", None)]
    assert history.differences(a, b, ignore=("host", "tool", "device0")) == []
