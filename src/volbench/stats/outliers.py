"""Outlier detection with the modified z-score (median and MAD), with cut-offs by n.

Iglewicz and Hoaglin's |M| > 3.5 was meant for samples of a few dozen: on clean normal
data it flags a value in 28 % of 3-run samples and 10-12 % at 10-20 runs, since with
few values the median and MAD are themselves noisy (at n = 3 the score has no upper
bound). `outliers_calibrated` uses a cut-off per n instead: the 95th percentile of the
largest |M| of n standard normal values, so a clean case is flagged at most 5 % of the
time whatever its number of runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from volbench.stats.distributions import normal_quantile
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


# 95th percentile of max_i |M_i| over n iid standard normal values, by n: a seeded
# simulation (bench/calibration.py --outlier-table; 200 000 samples per n up to 10,
# 60 000 above), rounded up to 2 decimals.
CUTOFFS: dict[int, float] = {
    3: 21.96, 4: 6.89, 5: 7.89, 6: 5.53, 7: 5.86, 8: 4.93, 9: 5.09, 10: 4.59, 11: 4.66,
    12: 4.41, 13: 4.39, 14: 4.24, 15: 4.28, 16: 4.15, 17: 4.19, 18: 4.05, 19: 4.09,
    20: 4.0, 21: 4.03, 22: 3.94, 23: 4.0, 24: 3.93, 25: 3.93, 26: 3.88, 27: 3.9, 28: 3.86,
    29: 3.87, 30: 3.85, 31: 3.85, 32: 3.84, 33: 3.85, 34: 3.81, 35: 3.83, 36: 3.81,
    37: 3.82, 38: 3.81, 39: 3.82, 40: 3.79, 41: 3.79, 42: 3.79, 43: 3.8, 44: 3.78,
    45: 3.77, 46: 3.78, 47: 3.8, 48: 3.75, 49: 3.77, 50: 3.76,
}
# The share of clean cases the cut-offs flag.
FALSE_FLAG_RATE = 0.05


def outlier_cutoff(n: int) -> float:
    """|M| cut-off for n values (inf below 3: one or two values have no outlier).

    Beyond the table the cut-off grows as the Bonferroni quantile of the largest of n
    normal values does, Φ^{-1}(1 - 0.025/n), scaled to meet the table's last entry.
    """
    if n < 3:
        return math.inf
    if n in CUTOFFS:
        return CUTOFFS[n]
    last = max(CUTOFFS)
    grow = normal_quantile(1.0 - FALSE_FLAG_RATE / (2 * n))
    return CUTOFFS[last] * grow / normal_quantile(1.0 - FALSE_FLAG_RATE / (2 * last))


def outliers_calibrated(values: Sequence[float], *, min_relative: float = 0.0) -> list[int]:
    """`outliers_mad` at the cut-off for this many values (`outlier_cutoff`), on the
    values and - when all are positive - on their logarithms too: a value is flagged
    only when it is far out on both scales.

    The cut-offs are calibrated on normal data. Benchmark values are often right-skewed
    (lognormal-like: latencies, a spread of 20 %), and there the long right tail is no
    outlier, yet the raw-scale rule flagged 10 % of clean lognormal CV 20 % cases at 20
    runs and 19 % at 80. On the log scale such data is normal, so the log rule holds 5 %
    there but flags too often on wide normal data. Asking both keeps each family at most
    5 % (bench/calibration.py: at most 4.9 % on normal CV 20 % and lognormal CV 5 % and
    20 %, 3 to 80 runs), at a small cost in power for high values (a run at 1.3x the median
    among 20 with CV 5 %: flagged 85 % of the time instead of 95 %); a stalled run (a
    half or less) is caught as before. tests/unit/test_calibration.py checks both families."""
    cutoff = outlier_cutoff(len(values))
    if math.isinf(cutoff):
        return []
    flagged = outliers_mad(values, threshold=cutoff, min_relative=min_relative)
    if not flagged or not all(v > 0.0 for v in values):
        return flagged
    logs = outliers_mad([math.log(v) for v in values], threshold=cutoff)
    return sorted(set(flagged) & set(logs))
