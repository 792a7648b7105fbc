"""Statistics for volbench: pure functions over plain sequences of floats.

Summaries and intervals (`summary`), distributions written out with the standard library
(`distributions`), Welch's t test (`welch`), rank tests (`ranks`), comparisons and
verdicts (`compare`), outliers (`outliers`), drift and stalls (`series`), and latency
histograms (`histogram`). Methods and references: docs/statistics.md.
"""

from volbench.stats.compare import (
    DEFAULT_MAX_RUNS,
    MIN_RUNS,
    Comparison,
    Scale,
    Verdict,
    compare,
    decide,
    is_decided,
    runs_needed,
    verdict_text,
)
from volbench.stats.distributions import (
    binomial_half_cdf,
    normal_quantile,
    normal_sf,
    regularized_incomplete_beta,
    t_cdf,
    t_pdf,
    t_quantile,
    t_sf,
    t_two_sided_p,
)
from volbench.stats.histogram import (
    merge_histograms,
    percentile_from_histogram,
    percentiles_from_histogram,
)
from volbench.stats.outliers import (
    modified_z_scores,
    outlier_cutoff,
    outliers_calibrated,
    outliers_mad,
)
from volbench.stats.ranks import MannWhitney, Spearman, mann_whitney, midranks, spearman
from volbench.stats.sequential import SequentialDesign, Spending
from volbench.stats.series import Drift, Stall, drift, smallest_drift_p, stalls
from volbench.stats.summary import Interval, Summary, mean_interval, median_interval, summarize
from volbench.stats.validation import StatisticsInputError
from volbench.stats.welch import WelchTest, welch_satterthwaite_df, welch_t_test

__all__ = [
    "DEFAULT_MAX_RUNS",
    "MIN_RUNS",
    "Comparison",
    "Drift",
    "Interval",
    "MannWhitney",
    "Scale",
    "SequentialDesign",
    "Spearman",
    "Spending",
    "Stall",
    "StatisticsInputError",
    "Summary",
    "Verdict",
    "WelchTest",
    "binomial_half_cdf",
    "compare",
    "decide",
    "drift",
    "is_decided",
    "mann_whitney",
    "mean_interval",
    "median_interval",
    "merge_histograms",
    "midranks",
    "modified_z_scores",
    "normal_quantile",
    "normal_sf",
    "outlier_cutoff",
    "outliers_calibrated",
    "outliers_mad",
    "percentile_from_histogram",
    "percentiles_from_histogram",
    "regularized_incomplete_beta",
    "runs_needed",
    "smallest_drift_p",
    "spearman",
    "stalls",
    "summarize",
    "t_cdf",
    "t_pdf",
    "t_quantile",
    "t_sf",
    "t_two_sided_p",
    "verdict_text",
    "welch_satterthwaite_df",
    "welch_t_test",
]
