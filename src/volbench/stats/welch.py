"""Welch's unequal-variances t test for the difference of two means."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from volbench.stats.distributions import t_quantile, t_two_sided_p
from volbench.stats.validation import (
    StatisticsInputError,
    check_probability,
    finite_sample,
    sample_variance,
)


@dataclass(frozen=True)
class WelchTest:
    """mean(first) - mean(second), its standard error, Welch-Satterthwaite df, t and p.

    When both groups have zero spread the standard error is 0: `t` is 0 (equal means,
    p = 1) or ±inf (different means, p = 0), and `df` is n1 + n2 - 2.
    """

    difference: float
    standard_error: float
    df: float
    t: float
    p_value: float

    def interval(self, confidence: float) -> tuple[float, float]:
        """Two-sided interval of the difference: difference ± t_{(1+c)/2, df} · se."""
        check_probability(confidence, "confidence")
        half = t_quantile((1.0 + confidence) / 2.0, self.df) * self.standard_error
        return (self.difference - half, self.difference + half)


def welch_satterthwaite_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom (Welch 1947; Satterthwaite 1946).

    Falls back to n_a + n_b - 2 when both variances are 0 and the formula is 0/0.
    """
    wa, wb = var_a / n_a, var_b / n_b
    denominator = wa * wa / (n_a - 1) + wb * wb / (n_b - 1)
    if denominator == 0.0:
        return float(n_a + n_b - 2)
    return (wa + wb) ** 2 / denominator


def welch_t_test(first: Sequence[float], second: Sequence[float]) -> WelchTest:
    """Welch's two-sided t test; needs at least two values in each group."""
    a = finite_sample(first, "first group")
    b = finite_sample(second, "second group")
    if len(a) < 2 or len(b) < 2:
        raise StatisticsInputError(
            f"Welch's t test needs at least 2 values per group, got {len(a)} and {len(b)}; "
            "run more repetitions"
        )
    var_a, var_b = sample_variance(a), sample_variance(b)
    difference = fmean(a) - fmean(b)
    se = math.sqrt(var_a / len(a) + var_b / len(b))
    df = welch_satterthwaite_df(var_a, len(a), var_b, len(b))
    if se == 0.0:
        if difference == 0.0:
            return WelchTest(difference, 0.0, df, 0.0, 1.0)
        return WelchTest(difference, 0.0, df, math.copysign(math.inf, difference), 0.0)
    t = difference / se
    return WelchTest(difference, se, df, t, t_two_sided_p(t, df))
