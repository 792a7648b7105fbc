"""`steady: {within: run}` judged on levels (stats.steady.level_check), seeded (issues 21
and 32).

The old check applied the 20 % range to raw seconds: a flat device at per-second CV 5 %
was "never steady" in 55 % of 300 s windows (100 % at CV 10 %), while a -0.5 %/min drift
passed like flat. Then (issue 32) the drift test, stated at 99 %, false-alarmed on 10 % of
flat 5 s windows (23 % at AR(1) 0.5, 36 % at 0.9), and at the default 5 s window a flat
device at CV 10 % was steady in 47 % of runs. bench/changepoint_rates.py --steady prints
the full table.
"""

from __future__ import annotations

import random

import pytest

from volbench.stats.seriessim import Noise, fio_stop_window, series
from volbench.stats.steady import level_check, window_shares


def steady_share(noise: Noise, seconds: int, drift_per_min: float, trials: int,
                 seed: int = 7) -> float:
    rng = random.Random(seed)
    steady = 0
    for _ in range(trials):
        values = series(rng, [500 * (1 + drift_per_min * t / 60) for t in range(seconds)],
                        noise)
        check = level_check(values)
        assert check is not None
        steady += check.steady(0.20, 0.10)
    return steady / trials


@pytest.mark.parametrize("noise", [Noise(0.05), Noise(0.10), Noise(0.10, 0.5)],
                         ids=lambda n: n.label)
def test_a_flat_device_is_steady(noise: Noise) -> None:
    assert steady_share(noise, 300, 0.0, 200) >= 0.95


def test_a_slow_drift_over_ten_minutes_is_not() -> None:
    assert steady_share(Noise(0.05), 600, -0.005, 100) <= 0.05


def test_levels_not_raw_seconds() -> None:
    rng = random.Random(1)
    values = series(rng, [500.0] * 300, Noise(0.10))
    raw_range, _ = window_shares(values) or (0.0, 0.0)
    check = level_check(values)
    assert check is not None
    assert raw_range > 0.4 and check.range_share < 0.1  # raw seconds span 40 %+, levels not
    assert not check.drifting and check.slope_low < 0 < check.slope_high
    quiet = series(rng, [500.0] * 300, Noise(0.05))
    falling = [v * (1 - 0.0002 * t) for t, v in enumerate(quiet)]  # -6 % over 300 s
    drop = level_check(falling)
    assert drop is not None and drop.drifting and drop.slope_high < 0
    assert drop.slope_share < 0.10  # within the SNIA slope limit: only the drift test sees it
    assert level_check([1.0, 2.0]) is None and level_check([0.0] * 10) is None
    assert level_check([500.0] * 5) == level_check([500.0] * 5)  # a 5 s window: its seconds


@pytest.mark.parametrize("noise", [Noise(0.10), Noise(0.10, 0.5), Noise(0.05, 0.5)],
                         ids=lambda n: n.label)
def test_a_flat_device_is_steady_at_the_default_5_s_window(noise: Noise) -> None:
    # The path users take: fio stops on its slope criterion (10 % over 5 s: 2.5 %/s), the
    # report judges that window. Goal >= 95 %; before 47 % (CV 10 %) and 74 % (AR 0.5).
    rng = random.Random(3205)
    steady = 0
    for _ in range(300):
        window = fio_stop_window(series(rng, [500.0] * 60, noise), 5, 0.10 / 4)
        check = None if window is None else level_check(window)
        steady += check is not None and check.steady(0.20, 0.10)
    assert steady / 300 >= 0.95


@pytest.mark.parametrize(("seconds", "noise"), [
    (5, Noise(0.05)), (5, Noise(0.10, 0.5)), (5, Noise(0.05, 0.9)),
    (30, Noise(0.10)), (30, Noise(0.10, 0.5)), (30, Noise(0.05, 0.9)),
    (300, Noise(0.10, 0.5))], ids=lambda x: str(x) if isinstance(x, int) else x.label)
def test_the_99_percent_drift_test_false_alarms_at_most_1_percent(seconds: int,
                                                                 noise: Noise) -> None:
    # 1500 flat windows: 1 % is 15 +- 3.9; before, 10-36 % at 5 s and 1.5-19 % at 30 s.
    rng = random.Random(3299 + seconds)
    trials = 1500 if seconds < 300 else 400
    alarms = 0
    for _ in range(trials):
        check = level_check(series(rng, [500.0] * seconds, noise))
        assert check is not None
        alarms += check.drifting
    assert alarms / trials <= 0.015
