"""The geometric mean of runs with an interval that stays positive.

A rate, a bandwidth or a time cannot be negative, and run-to-run spread on a busy machine
is multiplicative (a run slowed by half, not by a fixed amount): the mean of the logs with
a Student-t interval, taken back with exp, respects both. It is the centre the verdicts'
ratio of geometric means uses (stats/compare.py). Coverage on lognormal, busy-host and
normal run noise: bench/answer_coverage.py, docs/report.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.stats.distributions import t_quantile
from volbench.stats.summary import Interval


@dataclass(frozen=True)
class Figure:
    """A target's headline figure: geometric mean of its runs and its 95 % interval."""

    centre: float
    interval: Interval | None


def geometric_figure(values: Sequence[float], confidence: float = 0.95) -> Figure | None:
    """Geometric mean with a Student-t interval of the mean log (None without values).

    Guarantees: the interval lies in (0, inf) and contains the centre; with one value, or
    any value <= 0 (a stalled run: no log), the centre is the arithmetic mean and there
    is no interval. Assumes independent runs, as the verdicts do; coverage is measured
    in bench/answer_coverage.py (a fast check in tests/unit/test_answer.py).
    """
    if not values:
        return None
    if len(values) < 2 or min(values) <= 0:
        return Figure(sum(values) / len(values), None)
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t_quantile((1.0 + confidence) / 2.0, n - 1) * sd / math.sqrt(n)
    return Figure(math.exp(mean), Interval(math.exp(mean - half), math.exp(mean + half),
                                           confidence))
