"""Issue 24: change points over a history (stats/history.py), with its seeded error rates."""

from __future__ import annotations

import random

import pytest

from volbench.stats import history
from volbench.stats.validation import StatisticsInputError


def gauss(rng: random.Random, n: int) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(n)]


# Stalled experiments cost some power: 89.2 % at 1 000 histories (90.7 % before the drift
# test, which removes marginal change points when the drift estimate is above 0 by chance).
@pytest.mark.slow
@pytest.mark.parametrize(("noise", "power"), [(gauss, 0.90), (history.heavy_tails, 0.90),
                                              (history.stalls, 0.85)],
                         ids=["iid", "student-t3", "stalls"])
def test_a_5_percent_step_at_cv_3_percent_is_found_and_flat_histories_are_not(
        noise: history.Noise, power: float) -> None:
    rates = history.simulate_rates(noise, trials=200, seed=7)
    assert rates.detected >= power, rates
    assert rates.false_alarm <= 0.05, rates


@pytest.mark.slow
@pytest.mark.parametrize("phi", [0.3, 0.5, 0.7, 0.9])
def test_flat_histories_that_drift_together_are_flagged_at_most_5_percent(phi: float) -> None:
    # Without the drift test (_drift_prune) these were flagged in 8, 27, 60 and 88 %.
    rates = history.simulate_rates(history.ar1(phi), trials=200, seed=7)
    assert rates.false_alarm <= 0.05, rates


def test_drift_is_read_around_the_segments_so_a_step_is_not_drift() -> None:
    rng = random.Random(9)
    iid = [[1000 * (1 + 0.03 * rng.gauss(0, 1)) for _ in range(60)] for _ in range(50)]
    stepped = [[v * (1.1 if i >= 30 else 1.0) for i, v in enumerate(x)] for x in iid]
    drifting = [[1000 * (1 + 0.03 * e) for e in history.ar1(0.9)(rng, 60)] for _ in range(50)]

    def mean_drift(xs: list[list[float]], cuts: tuple[int, ...] = ()) -> float:
        return sum(history.drift(x, cuts) for x in xs) / len(xs)

    assert mean_drift(iid) < 0.2
    assert mean_drift(stepped) > 0.5  # read over one segment, the step looks like drift
    assert mean_drift(stepped, (30,)) == pytest.approx(mean_drift(iid, (30,)), abs=0.02)
    assert mean_drift(drifting) > 0.75
    assert history.drift([5.0, 5.0, 5.0, 5.0]) == 0.0 and history.drift([1.0, 2.0]) == 0.0


@pytest.mark.slow
def test_a_step_in_drifting_noise_is_rarely_told_from_the_drift() -> None:
    # The price of the drift test, stated in docs/store.md: under AR(1) phi 0.9 a 5 % step
    # at CV 3 % is not distinguishable from the wander on 60 single values.
    assert history.simulate_rates(history.ar1(0.9), trials=100, seed=7).detected < 0.2


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


@pytest.mark.slow
def test_the_step_read_online_is_rarely_flagged_within_3_experiments_after_it() -> None:
    # The "flagged within 3 experiments" read as the history stood then (after
    # experiment 33 of the 60): the method does NOT reach 90 % there. Measured, not tuned:
    # with 3 values after a split the permutation p cannot get under alpha (next test).
    online = history.simulate_online(gauss, trials=200, seed=7)
    offline = history.simulate_rates(gauss, trials=200, seed=7)  # the same histories
    assert offline.detected >= 0.90
    assert online.within(1) == online.within(2) == 0.0
    assert online.within(3) <= 0.05 and online.within(4) <= 0.05
    assert online.within(5) >= 0.08 and online.within(10) >= 0.5
    assert list(online.detected_by) == sorted(online.detected_by)
    # A flat history watched from 6 to 60 experiments: each look rarely, some look more.
    assert online.looks == 55
    assert online.flat_per_look <= 0.01 and online.flat_worst_look <= 0.05
    assert online.flat_any <= 0.10


def test_even_a_huge_step_needs_5_to_8_experiments_after_it_online() -> None:
    # A 30 % step (10 times the noise) in the last `after` values of 30 + after: ranks cap
    # the scan statistic (3 after, all highest: p 0.034 at the step itself, 4: 0.024,
    # above alpha 0.01), and the drift test's estimate, biased upwards by design in short
    # segments, widens the null further. Flagged anywhere: 7 %, 5 %, 57 %, 82 % at 3, 4,
    # 5, 8 after (100 seeded histories).
    def flagged(after: int) -> float:
        hits = 0
        for seed in range(100):
            rng = random.Random(seed)
            before = [1000 * (1 + 0.03 * rng.gauss(0, 1)) for _ in range(30)]
            stepped = [1000 * (1.3 + 0.03 * rng.gauss(0, 1)) for _ in range(10)]
            hits += bool(history.change_points(before + stepped[:after]))
        return hits / 100

    assert flagged(3) <= 0.10 and flagged(4) <= 0.10
    assert flagged(5) >= 0.5 and flagged(8) >= 0.75
