"""Seeded per-second series as real disks give them, for the error rates of the time analysis.

A disk's per-second rate is not independent from second to second: a busy host, a
controller's cache or a filesystem's writeback make it wander (AR(1) noise with phi up to
0.9), some seconds are wild (heavy tails), and a run stalls now and then (a second or
five near zero, at any moment, the first and last seconds included). The CI tests
(tests/unit/test_changepoint_rates.py) run these small, bench/changepoint_rates.py large.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from volbench.stats.changepoint import BURST, FLAT, Regimes


@dataclass(frozen=True)
class Noise:
    """Multiplicative noise: the rate is level * (1 + e), e an AR(1) series with marginal
    coefficient of variation `cv` and lag-1 correlation `phi`; `heavy` draws the
    innovations from Student t3 (scaled to the same variance); `stalls` 1-5 s stalls
    (the rate falls to 0-30 % of its level) at uniformly random places; `busy` the share of
    seconds another tenant takes 40 % of (slowed to 60 %, independently each second: the
    busy host of bench/phase_rules.py)."""

    cv: float
    phi: float = 0.0
    heavy: bool = False
    stalls: int = 0
    busy: float = 0.0

    @property
    def label(self) -> str:
        """'normal, AR 0.9, cv 15 %, 2 stall(s) of 1-5 s': the cell's row in a table."""
        kind = "t3" if self.heavy else "normal"
        dep = f", AR {self.phi:g}" if self.phi else ", iid"
        stalls = f", {self.stalls} stall(s) of 1-5 s" if self.stalls else ""
        busy = f", busy host ({self.busy * 100:g} % of seconds at 60 %)" if self.busy else ""
        return f"{kind}{dep}, cv {self.cv * 100:g} %{stalls}{busy}"


def _innovation(rng: random.Random, heavy: bool) -> float:
    if heavy:  # Student t3 has variance 3
        return rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2) / 3) / math.sqrt(3)
    return rng.gauss(0, 1)


def series(rng: random.Random, levels: Sequence[float], noise: Noise) -> list[float]:
    """One run's per-second rates: `levels` (one per second) with `noise` on them."""
    scale = math.sqrt(1 - noise.phi * noise.phi) * noise.cv
    e = noise.cv * _innovation(rng, noise.heavy)
    out = []
    for level in levels:
        out.append(max(0.0, level * (1 + e)))
        e = noise.phi * e + scale * _innovation(rng, noise.heavy)
    if noise.busy:
        out = [v * 0.6 if rng.random() < noise.busy else v for v in out]
    for _ in range(noise.stalls):
        length = rng.randint(1, 5)
        start = rng.randint(0, len(out) - length)
        for i in range(start, start + length):
            out[i] = out[i] * rng.uniform(0.0, 0.3)
    return out


def ends_stalled(rng: random.Random, values: list[float]) -> list[float]:
    """A 1-3 s stall (0-30 % of the level) in the first seconds and another in the last."""
    out = list(values)
    for side in (0, 1):
        n = rng.randint(1, 3)
        for i in range(n) if side == 0 else range(len(out) - n, len(out)):
            out[i] *= rng.uniform(0.0, 0.3)
    return out


def fio_stop_window(values: Sequence[float], window: int, limit: float) -> list[float] | None:
    """The window fio's `iops_slope` steady-state criterion stops on (fio's steadystate.c:
    the least-squares slope of the last `window` samples, per second, under `limit` of
    their mean): the first such window, or None when the run never holds it."""
    for end in range(window, len(values) + 1):
        w = list(values[end - window : end])
        mean = statistics.fmean(w)
        if mean > 0 and abs(statistics.linear_regression(range(window), w).slope) < limit * mean:
            return w
    return None


def burst_levels(seconds: int, burst: int, high: float, low: float) -> list[float]:
    """`burst` seconds at `high`, then `low` to the run's `seconds`."""
    return [high if i < burst else low for i in range(seconds)]


@dataclass(frozen=True)
class Rates:
    """Of `trials` flat runs, the share called burst or warm-up; of `trials` bursting
    runs, the share found as a burst and the share found with both levels within
    `tolerance` of the truth."""

    trials: int
    false_flags: float
    found: float
    levels_right: float


Detector = Callable[[Sequence[float]], Regimes]


def regime_rates(detector: Detector, *, seed: int, trials: int, noise: Noise, seconds: int,
                 burst: int = 20, ratio: float = 2.0, tolerance: float = 0.05) -> Rates:
    """Error rates of `detector` on seeded flat runs at 500 IOPS and on runs bursting at
    `ratio` x 500 for `burst` seconds, both with `noise`."""
    rng = random.Random(seed)
    false = found = right = 0
    for _ in range(trials):
        false += detector(series(rng, [500.0] * seconds, noise)).kind != FLAT
        got = detector(series(rng, burst_levels(seconds, burst, 500.0 * ratio, 500.0), noise))
        if got.kind == BURST:
            found += 1
            right += (abs(got.burst_level / (500.0 * ratio) - 1) <= tolerance
                      and abs(got.sustained_level / 500.0 - 1) <= tolerance)
    return Rates(trials, false / trials, found / trials, right / trials)
