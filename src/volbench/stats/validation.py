"""Input checks shared by every statistic: one place decides what a valid sample is."""

from __future__ import annotations

import math
from collections.abc import Sequence

from volbench.core.errors import VolbenchError


class StatisticsInputError(VolbenchError, ValueError):
    """A statistic was asked of data it cannot describe (empty, NaN, wrong shape).

    It is a `ValueError` too, so callers that only know the standard library can catch it.
    """


def finite_sample(values: Sequence[float], name: str = "values") -> list[float]:
    """Return `values` as a list of floats, refusing empty input and NaN or infinity.

    A NaN usually means a failed run slipped into the results; it must be dropped (and
    the failure reported) before statistics are computed, never averaged in silently.
    """
    sample = [float(v) for v in values]
    if not sample:
        raise StatisticsInputError(
            f"{name} is empty: at least one measurement is needed; "
            "check that the runs completed and produced this metric"
        )
    if all(map(math.isfinite, sample)):  # the common case, checked in a C loop
        return sample
    for index, value in enumerate(sample):
        if not math.isfinite(value):
            raise StatisticsInputError(
                f"{name}[{index}] is {value!r}: measurements must be finite numbers; "
                "drop failed runs before computing statistics"
            )
    return sample


def check_probability(value: float, name: str, *, low: float = 0.0, high: float = 1.0) -> None:
    """Refuse a level, fraction or probability outside the open interval (low, high)."""
    if not (low < value < high) or math.isnan(value):
        raise StatisticsInputError(
            f"{name} must lie strictly between {low:g} and {high:g}, got {value!r}"
        )


def sample_variance(values: Sequence[float]) -> float:
    """Sample variance (n - 1), two-pass in floats.

    statistics.variance computes exactly with Fractions, which is ~50× slower and buys
    nothing for measured values that carry far fewer significant digits than a float.
    The two-pass form (mean first, then squared deviations, with math.fsum) keeps the
    cancellation error of the one-pass formula away.
    """
    n = len(values)
    if n < 2:
        raise StatisticsInputError("the variance needs at least two values")
    if min(values) == max(values):
        # fsum(values) / n need not equal the value itself (3 x 0.1), which left
        # identical runs with a variance of 1e-33 instead of an interval [mean, mean].
        return 0.0
    mean = math.fsum(values) / n
    return math.fsum((v - mean) ** 2 for v in values) / (n - 1)
