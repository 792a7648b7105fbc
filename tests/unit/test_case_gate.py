"""The case-level "repetitions must agree" gate and the detector's false rate at 30 s
(issue 32, findings 1 and 2), seeded.

Before: flat runs within 10 % of one false window's early level counted as having ended
inside it, so flat cases of 30 s runs (AR(1) 0.9, CV 15 %) were told a burst or warm-up
story in 10-13 % with 3 and 5 runs, more than single runs (5.7-7.1 %); a true 3x burst
of 10 s in 40 s under that noise was found in 70 %. bench/changepoint_rates.py --case
prints the full tables.
"""

from __future__ import annotations

import random

import pytest

from volbench.core.model import Metric, Parsed, RunResult, Series, Status
from volbench.report import timeline
from volbench.stats.changepoint import BURST, FLAT, regimes
from volbench.stats.seriessim import Noise, ends_stalled, series
from volbench.stats.windows import with_windows


def run_of(values: list[float], rep: int, target: str = "t") -> RunResult:
    """A run as the runner stores it: whole-run metrics, the per-second series, windows."""
    points = tuple((float(i + 1), v) for i, v in enumerate(values))
    mean = sum(values) / len(values)
    whole = (Metric("iops", mean, "op/s", {"op": "read"}),
             Metric("lat_mean", 32 / max(mean, 1.0), "s", {"op": "read"}))
    parsed = with_windows(Parsed(whole, (Series("iops", "op/s", points, {"op": "read"}),)))
    start = 100.0 * rep
    return RunResult(target, "w", {"bs": "4k"}, rep + 1, Status.OK, start,
                     start + len(values), parsed=parsed)


def story_share(runs_per_case: int, seconds: int, noise: Noise, cases: int,
                seed: int, ends: bool = False) -> float:
    """The share of flat cases told a burst or warm-up story."""
    rng = random.Random(seed)
    told = 0
    for _ in range(cases):
        runs = []
        for i in range(runs_per_case):
            values = series(rng, [500.0] * seconds, noise)
            runs.append(run_of(ends_stalled(rng, values) if ends else values, i))
        told += bool(timeline.agreed(runs))
    return told / cases


@pytest.mark.parametrize("runs", [1, 3, 5])
def test_flat_cases_of_30_s_runs_under_wandering_noise_get_no_story(runs: int) -> None:
    # Goal <= 5 %; 200 cases a cell, the bound leaves ~1.5 standard errors for Monte Carlo.
    assert story_share(runs, 30, Noise(0.15, 0.9), 200, seed=32 + runs) <= 0.07


@pytest.mark.slow  # ~1.5 s on a quiet machine
@pytest.mark.parametrize("seconds", [30, 60])
def test_stalls_in_the_first_and_last_seconds_or_a_busy_host_tell_no_story(
        seconds: int) -> None:
    # Noise the critical values were not calibrated on (bench/claims.py --hard): before,
    # 3 runs of 30 s with a stall at each end were told a story in 9.4 %, now 0.0 %; a
    # busy host (10 % of seconds at 60 %) on AR(1) 0.9 at CV 10 %.
    stalled = story_share(3, seconds, Noise(0.15, 0.9), 200, seed=3300 + seconds, ends=True)
    busy = story_share(3, seconds, Noise(0.10, 0.9, busy=0.1), 200, seed=3400 + seconds)
    single = story_share(1, seconds, Noise(0.15, 0.9), 300, seed=3500 + seconds, ends=True)
    assert stalled <= 0.05 and busy <= 0.05 and single <= 0.07


def test_flat_runs_of_30_s_are_rarely_called_bursty_on_their_own() -> None:
    rng = random.Random(3230)
    flagged = sum(regimes(series(rng, [500.0] * 30, Noise(0.15, 0.9))).kind != FLAT
                  for _ in range(500))
    assert flagged / 500 <= 0.06  # goal 5 %; before: 6-7 %


def issue_case() -> list[RunResult]:
    """The issue's case: one run at 560 then 490 IOPS, two flat runs at 530 and 540."""
    rng = random.Random(1)

    def quiet(levels: list[float]) -> list[float]:
        return [v * (1 + rng.gauss(0, 0.003)) for v in levels]

    return [run_of(quiet([560.0] * 12 + [490.0] * 18), 0), run_of(quiet([530.0] * 30), 1),
            run_of(quiet([540.0] * 30), 2)]


def test_one_false_window_and_two_flat_runs_near_its_level_tell_no_story() -> None:
    runs = issue_case()
    assert timeline.agreed(runs) == {}
    judged = timeline.on_sustained(runs)  # window metrics left out, whole-run means judged
    assert judged is not None and {m.name for m in judged[0].metrics} == {"iops", "lat_mean"}
    assert judged[0].metrics[0].value == runs[0].metrics[0].value


def test_a_run_that_ended_inside_a_burst_still_counts_when_it_was_shorter() -> None:
    rng = random.Random(2)
    burst = [run_of(series(rng, [2500.0] * 20 + [500.0] * 40, Noise(0.01)), 0)]
    short = [run_of(series(rng, [2500.0] * 12, Noise(0.01)), i) for i in (1, 2)]
    runs = burst + short
    assert next(iter(timeline.agreed(runs).values()))[0].kind == BURST
    # The same flat runs as long as the bursting one cannot have ended inside it.
    long_flat = [run_of(series(rng, [2500.0] * 60, Noise(0.01)), i) for i in (1, 2)]
    assert timeline.agreed(burst + long_flat) == {}


def test_a_true_3x_burst_under_wandering_noise_is_found() -> None:
    # 3x for 10 s of 40, AR(1) 0.9, CV 15 %: goal >= 90 %; before, 70 %.
    rng = random.Random(3240)
    found = sum(regimes(series(rng, [1500.0] * 10 + [500.0] * 30, Noise(0.15, 0.9))).kind
                == BURST for _ in range(300))
    assert found / 300 >= 0.9
