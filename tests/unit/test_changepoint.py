"""The change-point detector on synthetic per-second series, and its false-detection rate."""

from __future__ import annotations

import random
import statistics

import pytest

from bounds import CpuTimed
from volbench.stats.arnoise import critical, shift_z
from volbench.stats.changepoint import (
    BURST,
    FLAT,
    TOO_SHORT,
    WARMUP,
    long_run_sigma,
    median3,
    noise_sigma,
    pelt,
    regimes,
)
from volbench.stats.validation import StatisticsInputError


def noisy(levels: list[tuple[float, int]], cv: float, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(level, level * cv) for level, n in levels for _ in range(n)]


def test_pelt_finds_exact_steps_without_noise() -> None:
    values = [10.0] * 10 + [20.0] * 10 + [5.0] * 10
    assert pelt(values, penalty=1.0) == [10, 20]
    assert pelt([3.0] * 30, penalty=1.0) == []


def test_single_wild_seconds_make_no_regime() -> None:
    values = noisy([(500, 60)], 0.01)
    for i in (1, 4, 7):  # a spike every third second early on: 3-s segment means would rise
        values[i] = 2500.0
    assert regimes(values).kind == FLAT
    assert median3([1.0, 9.0, 1.0, 1.0, 5.0, 5.0, 5.0]) == [1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0]


def test_noise_estimate_ignores_a_level_shift() -> None:
    values = noisy([(2500, 25), (500, 35)], cv=0.0)
    assert noise_sigma(values) == 0.0  # one jump moves one difference, not the spread
    values = noisy([(1000, 200)], cv=0.05, seed=3)
    assert 40 < noise_sigma(values) < 60


def test_burst_then_sustained_like_a_throttled_disk() -> None:
    # QEMU's bucket: 2500 IOPS for 24.4 s (the straddling second at 1300), then 500 (±0.3 %).
    values = [*noisy([(2500, 24)], 0.003), 1300.0, *noisy([(500, 35)], 0.003, seed=2)]
    found = regimes(values)
    assert found.kind == BURST
    assert found.burst_seconds == pytest.approx(24.4, abs=0.05)
    assert found.burst_level == pytest.approx(2500, rel=0.01)  # the straddler left out
    assert found.sustained_level == pytest.approx(500, rel=0.005)
    assert found.warmup_seconds == 0.0 and found.boundary == 24


def test_warmup_then_higher() -> None:
    found = regimes(noisy([(300, 10), (1000, 40)], 0.05))
    assert found.kind == WARMUP
    assert found.warmup_seconds == pytest.approx(10, abs=1)
    assert found.early_level == pytest.approx(300, rel=0.05)
    assert found.burst_seconds == 0.0 and found.burst_level == 0.0


def test_ramp_down_is_a_burst_ramp_up_a_warmup() -> None:
    ramp = [2000 - 75.0 * i for i in range(20)] + [500.0] * 30
    found = regimes(ramp)
    assert found.kind == BURST and 14 <= found.burst_seconds <= 20
    up = [200 + 40.0 * i for i in range(20)] + [1000.0] * 30
    found = regimes(up)
    # 8 s under half the level: too long for a dip, so a warm-up, not a stall
    assert found.kind == WARMUP and 14 <= found.warmup_seconds <= 20
    assert found.stalls == ()


def test_several_burst_steps_form_one_early_window() -> None:
    found = regimes(noisy([(3000, 10), (2000, 10), (500, 30)], 0.02))
    assert found.kind == BURST and found.boundary == 20
    assert len(found.segments) == 3


def test_stalls_are_not_regimes() -> None:
    base = noisy([(500, 60)], 0.02)
    short = [*base[:30], 0.0, 0.0, *base[32:]]  # a 2 s stall mid-run
    assert regimes(short).kind == FLAT
    long = [*base[:30], *[0.0] * 6, *base[36:]]  # 6 s of nothing mid-run: a stall, not a level
    found = regimes(long)
    assert found.kind == FLAT and found.stalls == ((30, 36),)
    assert found.sustained_level == pytest.approx(500, rel=0.01)
    assert regimes([0.0, 0.0, *base]).kind == FLAT  # a slow first 2 s is fio starting up


def test_small_shifts_do_not_count() -> None:
    # 5 % lower after 20 s: real to the penalty on a quiet disk, below min_change
    values = noisy([(500, 20), (475, 40)], 0.002)
    assert regimes(values).kind == FLAT
    assert regimes(values, min_change=0.04).kind == BURST


def test_too_short_and_degenerate_series() -> None:
    assert regimes([2500.0, 2500.0, 500.0, 500.0, 500.0, 500.0]).kind == TOO_SHORT
    assert regimes([]).kind == TOO_SHORT
    assert regimes([0.0] * 20).kind == FLAT
    assert regimes([7.0] * 20).kind == FLAT
    with pytest.raises(StatisticsInputError, match="min_change"):
        regimes([1.0] * 10, min_change=1.5)
    with pytest.raises(StatisticsInputError):
        regimes([1.0, float("nan")] * 10)


def false_burst_rate(cv: float, trials: int, n: int = 60, heavy: bool = False) -> float:
    """Share of flat noisy series (seeded) classified as anything but flat."""
    rng = random.Random(20261124)
    hits = 0
    for _ in range(trials):
        if heavy:  # Student t with 3 degrees of freedom: occasional wild seconds
            values = [500 * (1 + cv * rng.gauss(0, 1) / ((rng.gammavariate(1.5, 2) / 3) ** 0.5))
                      for _ in range(n)]
        else:
            values = [rng.gauss(500, 500 * cv) for _ in range(n)]
        hits += regimes(values).kind != FLAT
    return hits / trials


@pytest.mark.slow
@pytest.mark.parametrize(("cv", "heavy"), [(0.003, False), (0.05, False), (0.10, False),
                                            (0.05, True)])
def test_false_detection_rate_on_flat_series(cv: float, heavy: bool) -> None:
    # 300 seeded 60 s flat series each; bench/changepoint_rates.py measures 1000 (docs/time.md):
    # 0.0-0.1 % with normal noise up to cv 20 %, 0.2 % with t3 tails (wild seconds)
    assert false_burst_rate(cv, 300, heavy=heavy) <= 0.01


@pytest.mark.slow
def test_a_three_hour_run_is_segmented_fast_and_to_the_second() -> None:
    """Segmenting takes 0.10-0.11 CPU seconds quiet and niced beside a 2-core hog alike
    (wall 0.13-0.46 s and 2.8-4.5 s): the bound is on the CPU seconds (tests/bounds.py
    CpuTimed), 10 s, far below plain PELT's 3 minutes."""
    # 10 800 s (pgbench -T 10800): segmented on 18-s block means (MAX_POINTS), boundary
    # placed on the raw seconds; plain PELT took 3 minutes on this length.
    values = [2500.0] * 1507 + [1300.0] + noisy([(500, 9292)], 0.01)
    with CpuTimed() as timed:
        found = regimes(values)
    timed.within("3-hour run segmented: CPU s", 10)
    assert found.kind == BURST and found.boundary == 1507
    assert found.burst_seconds == pytest.approx(1507.4, abs=0.05)
    assert regimes(noisy([(500, 10800)], 0.05)).kind == FLAT
    warm = noisy([(300, 400), (1000, 3200)], 0.05)
    assert regimes(warm).warmup_seconds == pytest.approx(400, abs=1)


def test_run_ends_are_not_regimes() -> None:
    # the cases of issue 21: a stop at the end, a partial last second, jobs finishing one
    # by one; each was a 57-58 s "burst" with the end as its sustained level
    for values in ([500.0] * 57 + [0.0] * 3, [500.0] * 59 + [250.0],
                   [500.0] * 56 + [375.0, 250.0, 125.0, 0.0]):
        found = regimes(values)
        assert found.kind == FLAT, values[-4:]
        assert found.sustained_level == pytest.approx(500, rel=0.02)
    found = regimes([2500.0] * 20 + [500.0] * 38 + [0.0] * 2)
    assert found.kind == BURST and found.burst_seconds == pytest.approx(20)
    assert found.burst_level == 2500 and found.sustained_level == 500
    assert found.stalls == ((58, 60),) and found.end == 58
    assert found.sustained_indexes() == list(range(21, 58))


def test_a_stall_inside_a_burst_is_a_stall() -> None:
    values = noisy([(1000, 20), (500, 40)], 0.02)
    values[5:9] = [0.0, 100.0, 0.0, 250.0]  # under half the burst, above half the sustained
    found = regimes(values)
    assert found.kind == BURST and found.stalls == ((5, 9),)
    assert found.burst_level == pytest.approx(1000, rel=0.02)
    assert 5 not in found.early_indexes()


def test_a_wandering_flat_series_is_judged_by_its_own_noise() -> None:
    # AR(1) phi 0.9, cv 15 %: the old penalty (from first differences) saw sigma*sqrt(1-phi)
    # and called 60 % of these burst or warm-up; long_run_sigma sees the dependence
    rng = random.Random(5)
    e, values = 0.0, []
    for _ in range(60):
        e = 0.9 * e + 0.15 * (1 - 0.81) ** 0.5 * rng.gauss(0, 1)
        values.append(500 * (1 + e))
    sigma, phi = long_run_sigma([v - statistics.fmean(values) for v in values])
    assert phi > 0.6 and sigma > 2 * statistics.stdev(values)
    assert shift_z(values[:20], values[21:]) < critical(60)
    assert shift_z([v * 2 for v in values[:20]], values[21:]) > critical(60)


def test_a_steep_warm_up_keeps_its_first_slow_seconds() -> None:
    # Per-second IOPS of a fresh thin volume's first writes in the lab (8 MiB/s disk,
    # tests/lab/test_thin_first_touch_lab.py, 2026-11-25): its first seconds are under 10 %
    # of the sustained level, yet they are the warm-up, not stalls (an outage's median is
    # near zero; this stretch has a level of its own).
    series = [136.0, 143.0, 167.0, 199.0, 250.0, 288.0, 359.0, 593.0, 837.0, 1444.0, 1780.0,
              *[2048.0] * 33]
    found = regimes(series)
    assert found.kind == "warmup" and found.stalls == ()
    assert 8.5 <= found.warmup_seconds <= 11.5
    assert found.sustained_level == pytest.approx(2048, rel=0.01)
