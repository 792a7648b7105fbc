"""Outlier detection with the modified z-score (median and MAD)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from volbench.stats.validation import StatisticsInputError, finite_sample

# 0.6745 = Φ^{-1}(0.75): it makes the MAD of normal data comparable to its stdev.
MAD_CONSTANT = 0.6745
# sqrt(pi/2) = 1.2533: E|X - median| = sigma·sqrt(2/pi) for normal data, so
# 1.2533·MeanAD estimates sigma the same way MAD/0.6745 does.
MEAN_AD_CONSTANT = 1.253314


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """Modified z-scores M_i = 0.6745 · (x_i - median) / MAD (Iglewicz & Hoaglin 1993).

    When MAD is 0 (more than half the values are equal) the scale falls back to the mean
    absolute deviation from the median: M_i = (x_i - median) / (1.253314 · MeanAD), the
    convention IBM documents for this case (Cognos Analytics, "Modified z score"). When
    that is 0 too, every value is identical and every score is 0.
    """
    sample = finite_sample(values)
    median = statistics.median(sample)
    deviations = [abs(x - median) for x in sample]
    mad = statistics.median(deviations)
    if mad > 0.0:
        return [MAD_CONSTANT * (x - median) / mad for x in sample]
    mean_ad = math.fsum(deviations) / len(sample)
    if mean_ad > 0.0:
        return [(x - median) / (MEAN_AD_CONSTANT * mean_ad) for x in sample]
    return [0.0] * len(sample)


def outliers_mad(
    values: Sequence[float], *, threshold: float = 3.5, min_relative: float = 0.0
) -> list[int]:
    """Indices (ascending) of values whose |modified z-score| exceeds `threshold`.

    Boris Iglewicz and David C. Hoaglin, *How to Detect and Handle Outliers*, ASQC Basic
    References in Quality Control vol. 16, 1993: label |M_i| > 3.5 as potential outliers.
    Robust because median and MAD are barely moved by the outliers themselves (unlike
    mean and stdev, which an outlier inflates until it hides itself).

    Edge cases: one or two values never produce an outlier (for two values |M| = 0.6745);
    identical values produce none; if more than half the values are identical, MAD is 0
    and the mean-absolute-deviation fallback applies (see `modified_z_scores`), so in
    [5, 5, 5, 5, 6] the 6 is flagged (|M| = 3.99) — it differs from an otherwise exact
    repetition. Outliers are for reporting; callers decide whether to drop them.

    `min_relative` also asks that an outlier lie more than that share of the median away
    from the median: runs that repeat to 0.01 % (a throttled disk) have a MAD so small that
    a 0.04 % difference scores |M| > 100, which says nothing about the run.
    """
    if not threshold > 0.0:
        raise StatisticsInputError(f"outlier threshold must be positive, got {threshold!r}")
    if min_relative < 0.0:
        raise StatisticsInputError(f"min_relative must not be negative, got {min_relative!r}")
    scores = modified_z_scores(values)
    median = statistics.median(finite_sample(values))
    floor = min_relative * abs(median)
    return [
        index
        for index, score in enumerate(scores)
        if abs(score) > threshold and abs(values[index] - median) > floor
    ]
