"""Seeded load curves of an M/M/1 device: error of the knee and bias of the SLA rate.

An M/M/1 server of rate mu has p99 sojourn time ln(100)/(mu - lambda). Each round
measures saturation (mu with 1 % noise), then steps at fractions of it, then the SLA
probes chosen by `probe_rate` (the runner's bisection); achieved rates carry 1 % noise and
p99s a lognormal noise of `latency_cv`. The true knee (p99 twice its value at the
lightest step, 10 %) is 0.55·mu; the true rate within p99 <= ln(100)/(0.2·mu) is 0.8·mu.
"old" is the rule before interpolation: the knee at the last step below the line, the
SLA rate at the highest measured rate meeting the objective. Used by
tests/unit/test_curve_errors.py (small) and bench/calibration.py --only curves.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.curve import Point, knee, ordered, probe_rate, sla_rate

STEPS = (0.10, 0.25, 0.50, 0.75, 0.90, 1.00, 1.10)
MU = 1000.0
TRUE_KNEE = 0.55 * MU
TRUE_SLA = 0.80 * MU
LIMIT = math.log(100.0) / (0.2 * MU)


@dataclass(frozen=True)
class CurveErrors:
    """Median relative error of the knee, mean relative error (bias) of the SLA rate,
    old and new, and the share of rounds whose old knee was the 25 % step."""

    rounds: int
    knee_old: float
    knee_new: float
    sla_old: float
    sla_new: float
    knee_at_25: float


def _point(offered: float | None, rng: random.Random, latency_cv: float) -> Point:
    sigma = math.sqrt(math.log1p(latency_cv * latency_cv))
    load = MU if offered is None else min(offered, MU)
    rate = load * math.exp(rng.gauss(0.0, 0.01))
    headroom = max(MU - rate, MU * 0.005)  # at saturation the queue is bounded
    return Point(offered, rate, math.log(100.0) / headroom * math.exp(rng.gauss(0.0, sigma)))


def _old_knee(points: Sequence[Point]) -> float | None:
    line = [p for p in ordered(points) if p.latency]
    for before, point in itertools.pairwise(line):
        if point.latency and line[0].latency and point.latency > 2.0 * line[0].latency:
            return before.rate
    return None


def _old_sla(points: Sequence[Point]) -> float | None:
    best = None
    for p in ordered(points):
        if p.latency is None or p.latency > LIMIT:
            break
        best = p.rate if best is None else max(best, p.rate)
    return best


def curve_errors(rounds: int, *, probes: int = 3, latency_cv: float = 0.05,
                 seed: int = 21) -> CurveErrors:
    """Seeded rounds of the M/M/1 curve (see the module docstring)."""
    rng = random.Random(f"{seed}:{probes}:{latency_cv}")
    knees_old, knees_new, slas_old, slas_new = [], [], [], []
    at_25 = 0
    for _ in range(rounds):
        saturation = _point(None, rng, latency_cv)
        steps = [_point(f * saturation.rate, rng, latency_cv) for f in STEPS]
        points = [saturation, *steps]
        for _ in range(probes):
            offered = probe_rate(points, LIMIT, saturation.rate)
            points.append(_point(offered, rng, latency_cv))
        old, new = _old_knee(steps), knee(steps)
        if old is not None and new is not None:
            knees_old.append(old / TRUE_KNEE - 1.0)
            knees_new.append(new / TRUE_KNEE - 1.0)
            at_25 += abs(old / steps[1].rate - 1.0) < 1e-12
        old_sla, new_sla = _old_sla(points), sla_rate(points, LIMIT)
        if old_sla is not None and new_sla is not None:
            slas_old.append(old_sla / TRUE_SLA - 1.0)
            slas_new.append(new_sla / TRUE_SLA - 1.0)
    return CurveErrors(rounds, statistics.median(knees_old), statistics.median(knees_new),
                       statistics.fmean(slas_old), statistics.fmean(slas_new), at_25 / rounds)
