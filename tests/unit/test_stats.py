"""Tests for volbench.stats.

Expected values come from published tables, closed forms, R's documented example output,
brute-force enumeration written here, or arithmetic done by hand in the test; never from
the implementation's own output.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from volbench.stats import (
    Comparison,
    Interval,
    Scale,
    StatisticsInputError,
    Verdict,
    binomial_half_cdf,
    compare,
    drift,
    is_decided,
    mann_whitney,
    mean_interval,
    median_interval,
    merge_histograms,
    midranks,
    modified_z_scores,
    outliers_mad,
    percentile_from_histogram,
    regularized_incomplete_beta,
    runs_needed,
    spearman,
    stalls,
    summarize,
    t_cdf,
    t_pdf,
    t_quantile,
    t_two_sided_p,
    verdict_text,
    welch_t_test,
)
from volbench.stats.distributions import chi2_cdf, chi2_quantile

# R's `sleep` data set (Cushny & Peebles 1905): extra hours of sleep under two drugs.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


# ---------------------------------------------------------------- closed forms for checks
def t_cdf_df1(t: float) -> float:  # Cauchy
    return 0.5 + math.atan(t) / math.pi


def t_cdf_df2(t: float) -> float:
    return 0.5 + t / (2.0 * math.sqrt(2.0 + t * t))


def t_cdf_df4(t: float) -> float:
    x = t * t / 4.0
    return 0.5 + 0.375 * (t / math.sqrt(1.0 + x)) * (1.0 - x / (3.0 * (1.0 + x)))


def t_quantile_df2(p: float) -> float:
    return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))


def simpson(f: Callable[[float], float], a: float, b: float, steps: int = 4000) -> float:
    h = (b - a) / steps
    total = f(a) + f(b)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * f(a + i * h)
    return total * h / 3.0


def nearest_rank(samples: Sequence[float], p: float) -> float:
    """Percentile by the nearest-rank definition, straight from sorted samples."""
    ordered = sorted(samples)
    if p == 0:
        return ordered[0]
    return ordered[math.ceil(round(p * len(ordered) / 100.0, 9)) - 1]


def with_moments(rng: random.Random, n: int, mean: float, sd: float) -> list[float]:
    """n values whose sample mean and standard deviation are exactly `mean` and `sd`."""
    z = [rng.gauss(0.0, 1.0) for _ in range(n)]
    m, s = statistics.fmean(z), statistics.stdev(z)
    return [mean + sd * (x - m) / s for x in z]


# ---------------------------------------------------------------- distributions
@pytest.mark.parametrize(
    ("p", "df", "table"),
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 5, 2.571),
        (0.975, 10, 2.228),
        (0.975, 20, 2.086),
        (0.975, 30, 2.042),
        (0.975, 120, 1.980),
        (0.975, 1e7, 1.960),
        (0.975, math.inf, 1.960),
        (0.95, 10, 1.812),
        (0.995, 10, 3.169),
        (0.9995, 3, 12.924),
    ],
)
def test_t_quantile_matches_printed_tables(p: float, df: float, table: float) -> None:
    assert t_quantile(p, df) == pytest.approx(table, abs=6e-4)
    assert t_quantile(1.0 - p, df) == pytest.approx(-table, abs=6e-4)


@pytest.mark.parametrize("t", [-30.0, -3.0, -1.0, -0.2, 0.0, 0.5, 1.7, 4.0, 50.0])
def test_t_cdf_matches_closed_forms(t: float) -> None:
    assert t_cdf(t, 1) == pytest.approx(t_cdf_df1(t), rel=1e-11, abs=1e-14)
    assert t_cdf(t, 2) == pytest.approx(t_cdf_df2(t), rel=1e-11, abs=1e-14)
    assert t_cdf(t, 4) == pytest.approx(t_cdf_df4(t), rel=1e-11, abs=1e-14)


@pytest.mark.parametrize("p", [0.001, 0.05, 0.3, 0.5, 0.8, 0.975, 0.9999])
def test_t_quantile_matches_closed_forms(p: float) -> None:
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10, abs=1e-12)
    assert t_quantile(p, 2) == pytest.approx(t_quantile_df2(p), rel=1e-10, abs=1e-12)


def test_t_two_sided_p_keeps_far_tail_precision() -> None:
    # Cauchy: P(|T| >= t) = 2·atan(1/t)/pi, which for t = 1e6 is ~6.4e-7.
    assert t_two_sided_p(1e6, 1) == pytest.approx(2.0 * math.atan(1e-6) / math.pi, rel=1e-9)
    assert t_two_sided_p(0.0, 7.3) == 1.0
    assert t_two_sided_p(math.inf, 3) == 0.0


@pytest.mark.parametrize("df", [2.5, 7.5, 17.776])
def test_t_distribution_with_fractional_df_matches_numerical_integration(df: float) -> None:
    def density(x: float) -> float:  # written out independently of the module
        c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
        return float(c * (1 + x * x / df) ** (-(df + 1) / 2))

    for t in (0.3, 1.0, 2.2):
        assert t_pdf(t, df) == pytest.approx(density(t), rel=1e-12)
        assert t_cdf(t, df) == pytest.approx(0.5 + simpson(density, 0.0, t), rel=1e-9)
    q = t_quantile(0.975, df)
    assert 0.5 + simpson(density, 0.0, q) == pytest.approx(0.975, abs=1e-9)


def test_t_quantile_for_fractional_df_lies_between_neighbouring_integers() -> None:
    # Table: df 7 -> 2.365, df 8 -> 2.306.
    assert 2.306 < t_quantile(0.975, 7.5) < 2.365


def test_t_quantile_approaches_normal_for_large_df() -> None:
    values = [t_quantile(0.975, df) for df in (10, 100, 1000, 1e5, 1e8)]
    assert values == sorted(values, reverse=True)
    assert values[-1] == pytest.approx(1.959964, abs=1e-6)


@pytest.mark.parametrize(
    ("p", "df"),
    [(0.0, 3), (1.0, 3), (-0.1, 3), (math.nan, 3), (0.5, 0), (0.5, -2), (0.5, math.nan)],
)
def test_t_quantile_rejects_invalid_arguments(p: float, df: float) -> None:
    with pytest.raises(ValueError):
        t_quantile(p, df)


def test_regularized_incomplete_beta_special_cases() -> None:
    for x in (0.0, 0.01, 0.3, 0.5, 0.77, 0.999, 1.0):
        assert regularized_incomplete_beta(x, 1, 1) == pytest.approx(x, abs=1e-15)
        assert regularized_incomplete_beta(x, 3.5, 1) == pytest.approx(x**3.5, abs=1e-14)
        assert regularized_incomplete_beta(x, 1, 2.5) == pytest.approx(
            1 - (1 - x) ** 2.5, abs=1e-14
        )
        assert regularized_incomplete_beta(x, 2.2, 4.7) + regularized_incomplete_beta(
            1 - x, 4.7, 2.2
        ) == pytest.approx(1.0, abs=1e-14)
    with pytest.raises(ValueError):
        regularized_incomplete_beta(1.5, 1, 1)


def test_binomial_half_cdf_matches_exact_counting() -> None:
    for n in range(0, 31):
        for k in range(-1, n + 2):
            exact = sum(math.comb(n, i) for i in range(0, min(k, n) + 1)) / 2**n
            assert binomial_half_cdf(k, n) == pytest.approx(exact, rel=1e-12, abs=1e-300)


# ---------------------------------------------------------------- summary
def test_summarize_textbook_sample() -> None:
    values = [2, 4, 4, 4, 5, 5, 7, 9]
    s = summarize(values)
    sd = math.sqrt(32 / 7)  # sum of squared deviations 32, n - 1 = 7
    assert (s.n, s.mean, s.median, s.min, s.max) == (8, 5.0, 4.5, 2.0, 9.0)
    assert s.stdev == pytest.approx(sd)
    assert s.cv == pytest.approx(sd / 5)
    # Positive values: the modified Cox interval on the logs (stays positive).
    logs = [math.log(v) for v in values]
    ybar, v = statistics.fmean(logs), statistics.variance(logs)
    cox = 2.365 * math.sqrt(v / 8 + v * v / 14)  # t_{0.975, 7} = 2.365 from the table
    assert s.mean_ci is not None
    assert s.mean_ci.low == pytest.approx(math.exp(ybar + v / 2 - cox), rel=1e-3)
    assert s.mean_ci.high == pytest.approx(math.exp(ybar + v / 2 + cox), rel=1e-3)
    assert s.mean_ci.level == 0.95
    # With a zero or a negative value: Student's t interval, the textbook's.
    shifted = summarize([x - 2 for x in values]).mean_ci
    half = 2.365 * sd / math.sqrt(8)
    assert shifted is not None
    assert (shifted.low, shifted.high) == pytest.approx((3 - half, 3 + half), abs=1e-3)
    assert s.median_ci is not None  # n = 8: [x(1), x(8)], coverage 1 - 2/256
    assert (s.median_ci.low, s.median_ci.high) == (2.0, 9.0)
    assert s.median_ci.level == pytest.approx(1 - 2 / 256)


def test_summarize_one_sample() -> None:
    s = summarize([3.25])
    assert (s.n, s.mean, s.median, s.min, s.max, s.stdev, s.cv) == (1, 3.25, 3.25, 3.25, 3.25, 0, 0)
    assert s.mean_ci is None
    assert s.median_ci is None


def test_summarize_zero_spread() -> None:
    s = summarize([7.5] * 6)
    assert s.stdev == 0.0
    assert s.cv == 0.0
    assert s.mean_ci == Interval(7.5, 7.5, 0.95)
    assert s.median_ci is not None
    assert (s.median_ci.low, s.median_ci.high) == (7.5, 7.5)


def test_summarize_cv_undefined_for_zero_mean_and_positive_for_negative_mean() -> None:
    assert summarize([-1.0, 1.0]).cv is None
    negative = summarize([-2.0, -4.0])
    assert negative.cv == pytest.approx(math.sqrt(2) / 3)


def test_summarize_with_ties() -> None:
    s = summarize([3, 1, 2, 2, 2, 3, 1, 2, 2, 3])
    assert s.median == 2.0
    assert s.median_ci is not None  # n = 10: [x(2), x(9)] = [1, 3]
    assert (s.median_ci.low, s.median_ci.high) == (1.0, 3.0)


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [math.inf], [1.0, -math.inf]])
def test_summarize_rejects_empty_and_non_finite(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"empty|finite"):
        summarize(bad)


def test_statistics_input_error_is_a_value_error_with_a_clear_message() -> None:
    with pytest.raises(StatisticsInputError, match=r"values\[1\] is nan"):
        summarize([1.0, math.nan])
    with pytest.raises(StatisticsInputError, match="confidence"):
        summarize([1.0, 2.0], confidence=1.0)


def test_median_interval_small_n_and_exact_coverage() -> None:
    for n in range(1, 6):  # even [min, max] covers only 1 - 2/2^n < 95 %
        assert median_interval(list(range(n))) is None
    six = median_interval([6, 1, 5, 2, 4, 3])
    assert six == Interval(1, 6, 1 - 2 / 64)
    ten = median_interval(list(range(1, 11)))  # P(B<=1) = 11/1024; P(B<=2) = 56/1024 too big
    assert ten == Interval(2, 9, 1 - 2 * 11 / 1024)


def test_median_interval_order_statistic_index_against_brute_force() -> None:
    for n in (6, 9, 17, 40, 101):
        interval = median_interval([float(i) for i in range(1, n + 1)])
        assert interval is not None
        k = int(interval.low)  # values are 1..n, so the value is the 1-based index
        assert interval.high == n - k + 1

        def coverage(j: int, size: int = n) -> float:
            return 1 - 2 * sum(math.comb(size, i) for i in range(j)) / float(2**size)

        assert coverage(k) >= 0.95
        assert k + 1 > (n + 1) // 2 or coverage(k + 1) < 0.95
        assert interval.level == pytest.approx(coverage(k), rel=1e-12)


@pytest.mark.slow
def test_mean_interval_coverage_on_seeded_normal_data() -> None:
    rng = random.Random(20240601)
    hits = 0
    for _ in range(400):
        interval = mean_interval([rng.gauss(100.0, 5.0) for _ in range(8)])
        assert interval is not None
        hits += 100.0 in interval
    assert 0.92 <= hits / 400 <= 0.98


@pytest.mark.slow
def test_median_interval_coverage_on_seeded_skewed_data() -> None:
    rng = random.Random(7)
    true_median = math.log(2)  # exponential with rate 1
    hits = 0
    for _ in range(400):
        interval = median_interval([rng.expovariate(1.0) for _ in range(15)])
        assert interval is not None
        hits += true_median in interval
    assert hits / 400 >= 0.93


# ---------------------------------------------------------------- Welch
def test_welch_matches_r_sleep_example() -> None:
    # R: t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776, p-value = 0.07939,
    # 95 percent confidence interval: -3.3654832 0.2054832.
    w = welch_t_test(SLEEP_1, SLEEP_2)
    assert w.t == pytest.approx(-1.8608, abs=1e-4)
    assert w.df == pytest.approx(17.776, abs=1e-3)
    assert w.p_value == pytest.approx(0.07939, abs=1e-5)
    low, high = w.interval(0.95)
    assert low == pytest.approx(-3.3654832, abs=1e-6)
    assert high == pytest.approx(0.2054832, abs=1e-6)


def test_welch_by_hand_with_integer_df() -> None:
    # [1, 3] vs [6, 8]: variances 2 and 2, se = sqrt(2/2 + 2/2), df = 2.
    w = welch_t_test([1, 3], [6, 8])
    t = -5 / math.sqrt(2)
    assert w.t == pytest.approx(t)
    assert w.df == pytest.approx(2.0)
    assert w.p_value == pytest.approx(2 * t_cdf_df2(t), rel=1e-10)
    # [1, 2, 3] vs [5, 6, 7]: variances 1 and 1, se = sqrt(2/3), df = 4.
    w = welch_t_test([1, 2, 3], [5, 6, 7])
    t = -4 / math.sqrt(2 / 3)
    assert w.df == pytest.approx(4.0)
    assert w.p_value == pytest.approx(2 * t_cdf_df4(t), rel=1e-9)


def test_welch_zero_spread_and_small_samples() -> None:
    same = welch_t_test([5, 5, 5], [5, 5])
    assert (same.t, same.p_value, same.standard_error) == (0.0, 1.0, 0.0)
    apart = welch_t_test([4, 4], [5, 5, 5])
    assert apart.t == -math.inf
    assert apart.p_value == 0.0
    assert apart.interval(0.95) == (-1.0, -1.0)
    with pytest.raises(ValueError, match="at least 2"):
        welch_t_test([1.0], [1.0, 2.0])


# ---------------------------------------------------------------- Mann-Whitney
def brute_force_mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    pooled = list(a) + list(b)

    def u_of(group: Sequence[float], other: Sequence[float]) -> float:
        return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in group for y in other)

    observed = u_of(a, b)
    us = []
    for chosen in itertools.combinations(range(len(pooled)), len(a)):
        group = [pooled[i] for i in chosen]
        rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        us.append(u_of(group, rest))
    lower = sum(u <= observed for u in us) / len(us)
    upper = sum(u >= observed for u in us) / len(us)
    return min(1.0, 2 * min(lower, upper))


@pytest.mark.parametrize(
    ("m", "n", "seed"), [(1, 1, 1), (3, 4, 2), (5, 5, 3), (2, 7, 4), (4, 6, 5)]
)
def test_mann_whitney_exact_p_matches_enumeration(m: int, n: int, seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.uniform(0, 10) for _ in range(m)]
    b = [rng.uniform(2, 12) for _ in range(n)]
    result = mann_whitney(a, b)
    assert result.exact
    assert result.u == sum(x > y for x in a for y in b)
    assert result.p_value == pytest.approx(brute_force_mann_whitney_p(a, b), rel=1e-12)
    assert mann_whitney(b, a).p_value == pytest.approx(result.p_value, rel=1e-12)
    assert mann_whitney(b, a).u == m * n - result.u


def test_mann_whitney_complete_separation() -> None:
    result = mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert result.u == 0
    assert result.p_value == pytest.approx(2 / math.comb(10, 5))


def test_mann_whitney_with_ties_matches_r_sleep_example() -> None:
    # R: wilcox.test(extra ~ group, data = sleep): W = 25.5, p-value = 0.06933
    # (normal approximation with tie and continuity correction).
    result = mann_whitney(SLEEP_1, SLEEP_2)
    assert not result.exact
    assert result.u == 25.5
    assert result.p_value == pytest.approx(0.06933, abs=1e-5)


def test_mann_whitney_all_identical() -> None:
    result = mann_whitney([3.0, 3.0], [3.0, 3.0, 3.0])
    assert result.p_value == 1.0
    assert result.u == 3.0


def test_midranks_share_ties() -> None:
    assert midranks([10, 20, 20, 5, 20]) == [2.0, 4.0, 4.0, 1.0, 4.0]


# ---------------------------------------------------------------- compare
def noisy(rng: random.Random, centre: float, cv: float, n: int) -> list[float]:
    return [centre * math.exp(rng.gauss(0.0, cv)) for _ in range(n)]


def test_compare_identical_groups_is_equivalent() -> None:
    values = [100.0, 101.0, 99.0, 100.5, 99.5]
    c = compare(values, list(values), higher_is_better=True)
    assert c.verdict is Verdict.EQUIVALENT
    assert c.ratio == pytest.approx(1.0)
    assert c.p_value == pytest.approx(1.0)
    assert c.mann_whitney_p == 1.0
    assert c.scale is Scale.LOG
    assert verdict_text(c, "tps") == "tps: no difference beyond ±2 %"


def test_compare_on_logs_by_hand() -> None:
    # log-values [0, 0.02] vs [0.1, 0.12]: d = -0.1, se = sqrt(2e-4), df = 2.
    candidate = [math.exp(0.0), math.exp(0.02)]
    baseline = [math.exp(0.1), math.exp(0.12)]
    c = compare(candidate, baseline, higher_is_better=False)
    se = math.sqrt(0.0002)
    half95 = t_quantile_df2(0.975) * se
    assert c.ratio == pytest.approx(math.exp(-0.1), rel=1e-12)
    assert c.ratio_ci is not None
    assert c.ratio_ci.low == pytest.approx(math.exp(-0.1 - half95), rel=1e-9)
    assert c.ratio_ci.high == pytest.approx(math.exp(-0.1 + half95), rel=1e-9)
    assert c.equivalence_ci is not None
    assert c.equivalence_ci.low == pytest.approx(math.exp(-0.1 - t_quantile_df2(0.95) * se))
    assert c.p_value == pytest.approx(2 * t_cdf_df2(-0.1 / se), rel=1e-9)
    assert c.df == pytest.approx(2.0)
    assert c.verdict is Verdict.BETTER  # 9.5 % lower latency
    assert c.significant
    assert is_decided(c)
    assert verdict_text(c, "latency").startswith("latency lower by 9.5 % [")


def test_compare_direction_follows_higher_is_better() -> None:
    rng = random.Random(11)
    fast = noisy(rng, 300.0, 0.01, 5)
    slow = noisy(rng, 100.0, 0.01, 5)
    throughput = compare(fast, slow, higher_is_better=True)
    latency = compare(fast, slow, higher_is_better=False)
    assert throughput.verdict is Verdict.BETTER
    assert latency.verdict is Verdict.WORSE
    assert throughput.ratio_ci is not None
    assert 3.0 in throughput.ratio_ci
    assert throughput.p_value is not None and throughput.p_value < 1e-6
    assert verdict_text(latency, "latency").endswith("— worse")


def test_compare_zero_spread_on_both_sides() -> None:
    same = compare([5.0] * 3, [5.0] * 3, higher_is_better=True)
    assert same.verdict is Verdict.EQUIVALENT
    assert same.ratio_ci == Interval(1.0, 1.0, 0.95)
    higher = compare([6.0] * 3, [5.0] * 3, higher_is_better=True)
    assert higher.verdict is Verdict.BETTER
    assert higher.ratio_ci is not None
    assert higher.ratio_ci.low == pytest.approx(1.2)
    assert higher.ratio_ci.high == pytest.approx(1.2)
    small = compare([5.05] * 3, [5.0] * 3, higher_is_better=True)  # +1 %, inside ±2 %
    assert small.verdict is Verdict.EQUIVALENT
    assert small.significant


def test_compare_significant_but_within_threshold_is_equivalent() -> None:
    rng = random.Random(3)
    base = noisy(rng, 1000.0, 0.001, 10)
    candidate = [v * 1.006 for v in noisy(rng, 1000.0, 0.001, 10)]
    c = compare(candidate, base, higher_is_better=True)
    assert c.significant
    assert c.verdict is Verdict.EQUIVALENT
    assert verdict_text(c) == "no difference beyond ±2 %"


def test_compare_point_inside_threshold_but_interval_not_is_a_difference() -> None:
    # log-values d ± e vs ±e, n = 2: se = sqrt(2)·e, df = 2. With d = log(1.015) and
    # e = 0.0018 the 95 % interval excludes 0 but the 90 % interval reaches past log(1.02).
    d, e = math.log(1.015), 0.0018
    c = compare(
        [math.exp(d - e), math.exp(d + e)], [math.exp(-e), math.exp(e)], higher_is_better=True
    )
    se = math.sqrt(2) * e
    assert d - t_quantile_df2(0.975) * se > 0  # the hand check behind the construction
    assert d + t_quantile_df2(0.95) * se > math.log(1.02)
    assert c.verdict is Verdict.BETTER
    assert c.ratio < 1.02


def test_compare_falls_back_to_raw_values_for_negative_data() -> None:
    c = compare(SLEEP_2, SLEEP_1, higher_is_better=True)
    assert c.scale is Scale.RAW
    mean_1, mean_2 = statistics.fmean(SLEEP_1), statistics.fmean(SLEEP_2)  # 0.75, 2.33
    assert c.ratio == pytest.approx(mean_2 / mean_1)
    assert c.ratio_ci is not None  # R's interval for the difference, over the baseline mean
    assert c.ratio_ci.low == pytest.approx(1 + (-0.2054832) / mean_1, abs=1e-6)
    assert c.ratio_ci.high == pytest.approx(1 + 3.3654832 / mean_1, abs=1e-6)
    assert c.p_value == pytest.approx(0.07939, abs=1e-5)
    assert c.verdict is Verdict.INCONCLUSIVE


def test_compare_falls_back_to_raw_values_for_zeros() -> None:
    c = compare([0.0, 1.0, 2.0], [10.0, 11.0, 12.0], higher_is_better=True)
    assert c.scale is Scale.RAW
    assert c.ratio == pytest.approx(1.0 / 11.0)
    assert c.verdict is Verdict.WORSE


def test_compare_rejects_non_positive_baseline_mean() -> None:
    with pytest.raises(ValueError, match="positive"):
        compare([1.0, 2.0], [-1.0, 0.5], higher_is_better=True)


def test_compare_with_one_run_asks_for_three() -> None:
    c = compare([10.0], [11.0, 12.0, 13.0], higher_is_better=True)
    assert c.verdict is Verdict.INCONCLUSIVE
    assert c.runs_needed == 3
    assert c.p_value is None and c.ratio_ci is None and c.df is None
    assert not is_decided(c)
    assert verdict_text(c) == "inconclusive — about 2 more runs needed (3 per side)"
    assert runs_needed([10.0], [11.0]) == 3


@pytest.mark.parametrize(
    "kwargs",
    [{"threshold": 0.0}, {"threshold": 1.0}, {"alpha": 0.0}, {"alpha": 0.5}, {"max_runs": 2}],
)
def test_compare_rejects_invalid_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], higher_is_better=True, **kwargs)


@pytest.mark.parametrize("bad", [[], [1.0, math.nan]])
def test_compare_rejects_empty_and_nan(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        compare(bad, [1.0, 2.0], higher_is_better=True)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], bad, higher_is_better=True)


def test_runs_needed_is_promised_at_the_spreads_upper_bound_only() -> None:
    candidate = [103.0, 96.0, 108.0]
    baseline = [100.0, 104.0, 94.0]
    c = compare(candidate, baseline, higher_is_better=True, threshold=0.10)
    assert c.verdict is Verdict.INCONCLUSIVE
    assert c.runs_needed is not None and c.runs_needed_low is not None
    assert 4 <= c.runs_needed_low < c.runs_needed
    assert c.runs_needed == runs_needed(candidate, baseline, threshold=0.10)
    high = c.runs_needed
    # The number at the observed spread is no promise (issue 32) and is not printed.
    assert verdict_text(c) == f"inconclusive — about {high - 3} more runs needed ({high} per side)"
    # At a 2 % threshold the observed spread would decide within the cap, its upper 99.9 %
    # bound would not: no number.
    tight = compare(candidate, baseline, higher_is_better=True)
    assert tight.runs_needed_capped and tight.runs_needed_low is not None
    assert verdict_text(tight) == ("inconclusive — no number of runs can be promised from 3 "
                                   "per side: their spread is too uncertain")


def test_runs_needed_promises_80_percent_power_for_any_true_difference() -> None:
    from volbench.stats.power import _undecided  # the criterion itself

    logs_c = [math.log(v) for v in (103.0, 96.0, 108.0)]
    logs_b = [math.log(v) for v in (100.0, 104.0, 94.0)]
    var_c, var_b = statistics.variance(logs_c), statistics.variance(logs_b)
    df = (var_c / 3 + var_b / 3) ** 2 / ((var_c / 3) ** 2 / 2 + (var_b / 3) ** 2 / 2)
    # One-sided 99.9 % upper bound of the variance: s² · df / chi2(0.001, df).
    upper = (var_c + var_b) * df / chi2_quantile(0.001, df)
    ratio_df = (var_c + var_b) ** 2 / (var_c**2 + var_b**2)
    band = (math.log(0.90), math.log(1.10))

    def levels(n: int) -> tuple[float, float]:
        return 0.05, 0.10

    n = runs_needed([103.0, 96.0, 108.0], [100.0, 104.0, 94.0], threshold=0.10)
    assert _undecided(n, upper, ratio_df, band, levels) <= 0.2
    assert _undecided(n - 1, upper, ratio_df, band, levels) > 0.2
    # Brute force over true differences at n: no delta leaves it undecided > 20 %.
    rng = random.Random(8)
    se = math.sqrt(upper / n)
    dfn = (n - 1) * ratio_df
    h95, h90 = t_quantile(0.975, dfn) * se, t_quantile(0.95, dfn) * se
    for delta in (0.0, 0.005, 0.01, 0.015, 0.02, 0.03):
        draws = [rng.gauss(delta, se) for _ in range(4000)]
        undecided = sum(abs(d) < h95 and not (band[0] + h90 < d < band[1] - h90)
                        for d in draws)
        assert undecided / 4000 <= 0.2 + 0.02


def test_chi_square_quantiles_match_printed_tables() -> None:
    # Abramowitz & Stegun table 26.8 / any chi-square table; df 2 in closed form.
    assert chi2_quantile(0.05, 4) == pytest.approx(0.7107, abs=1e-4)
    assert chi2_quantile(0.95, 10) == pytest.approx(18.307, abs=1e-3)
    assert chi2_quantile(0.2, 4) == pytest.approx(1.6488, abs=1e-4)
    assert chi2_quantile(0.3, 2) == pytest.approx(-2 * math.log(0.7), rel=1e-9)
    assert chi2_cdf(3.84146, 1) == pytest.approx(0.95, abs=1e-5)


def test_runs_needed_grows_with_noise_and_is_capped() -> None:
    # At a 30 % threshold: from 3 runs a side the spread's upper 99.9 % bound is 44 times
    # what they show, and a 2 % threshold promises a number to neither.
    quiet = runs_needed([101.0, 99.0, 100.0], [100.0, 102.0, 98.0], threshold=0.3)
    loud = runs_needed([110.0, 90.0, 100.0], [100.0, 120.0, 80.0], threshold=0.3)
    assert 3 <= quiet < loud < 1000
    c = compare([130.0, 70.0, 101.0], [100.0, 150.0, 50.0], higher_is_better=True, max_runs=10)
    assert c.verdict is Verdict.INCONCLUSIVE
    assert c.runs_needed == 10 and c.runs_needed_capped
    assert verdict_text(c, "iops") == "iops: inconclusive — more than 10 runs per side needed"


def test_verdict_text_formats_a_hand_built_comparison() -> None:
    c = Comparison(
        verdict=Verdict.BETTER,
        higher_is_better=False,
        ratio=0.877,
        ratio_ci=Interval(0.851, 0.902, 0.95),
        equivalence_ci=Interval(0.855, 0.898, 0.9),
        p_value=1e-6,
        equivalence_p_value=1.0,
        mann_whitney_p=0.008,
        significant=True,
        df=9.1,
        scale=Scale.LOG,
        threshold=0.02,
        alpha=0.05,
        n_candidate=6,
        n_baseline=6,
        runs_needed=None,
    )
    assert verdict_text(c, "latency") == "latency lower by 12.3 % [9.8, 14.9] — better"
    assert verdict_text(c) == "lower by 12.3 % [9.8, 14.9] — better"
    assert c.change_pct == pytest.approx(-12.3)


@pytest.mark.slow
def test_false_positive_rate_on_equal_distributions() -> None:
    rng = random.Random(12345)
    welch_hits = mw_hits = 0
    for _ in range(200):
        c = compare(noisy(rng, 50.0, 0.05, 5), noisy(rng, 50.0, 0.05, 5), higher_is_better=True)
        welch_hits += c.significant
        mw_hits += c.mann_whitney_p < 0.05
        assert (c.p_value is not None) and (c.p_value < 0.05) == c.significant
        assert (c.equivalence_p_value is not None) and (
            (c.equivalence_p_value < 0.05) == (c.verdict is Verdict.EQUIVALENT)
        )
    assert welch_hits / 200 <= 0.08
    assert mw_hits / 200 <= 0.08


@pytest.mark.slow
def test_true_differences_are_found_and_not_called_equivalent() -> None:
    rng = random.Random(99)
    found = equivalent = 0
    for _ in range(200):
        c = compare(noisy(rng, 130.0, 0.05, 5), noisy(rng, 100.0, 0.05, 5), higher_is_better=True)
        found += c.verdict is Verdict.BETTER
        d = compare(noisy(rng, 105.0, 0.03, 6), noisy(rng, 100.0, 0.03, 6), higher_is_better=True)
        equivalent += d.verdict is Verdict.EQUIVALENT  # true +5 % is beyond ±2 %
    assert found / 200 >= 0.95
    assert equivalent / 200 <= 0.05


# ---------------------------------------------------------------- outliers
def test_outliers_mad_iglewicz_hoaglin_example() -> None:
    values = [10, 11, 12, 12, 13, 14, 35]  # median 12, MAD 1
    scores = modified_z_scores(values)
    assert scores[6] == pytest.approx(0.6745 * 23)
    assert scores[0] == pytest.approx(-0.6745 * 2)
    assert outliers_mad(values) == [6]
    assert outliers_mad([-v for v in values]) == [6]


def test_outliers_mad_does_not_let_two_outliers_hide_each_other() -> None:
    assert outliers_mad([35, 10, 11, 12, 12, 13, 14, 36]) == [0, 7]


def test_outliers_mad_threshold_is_respected() -> None:
    values = [10, 11, 12, 12, 13, 14, 17]  # 17: 0.6745·5 = 3.37
    assert outliers_mad(values) == []
    assert outliers_mad(values, threshold=3.0) == [6]
    with pytest.raises(ValueError):
        outliers_mad(values, threshold=0.0)


def test_outliers_mad_min_relative_ignores_tiny_differences_of_tight_runs() -> None:
    values = [496.89, 496.70, 496.90, 496.91, 496.90]  # a throttled disk: 0.04 % apart
    assert outliers_mad(values) == [1]
    assert outliers_mad(values, min_relative=0.01) == []
    assert outliers_mad([500.0, 501.0, 500.5, 500.2, 400.0], min_relative=0.01) == [4]
    with pytest.raises(ValueError):
        outliers_mad(values, min_relative=-0.1)


def test_outliers_mad_zero_mad_falls_back_to_mean_absolute_deviation() -> None:
    values = [5, 5, 5, 5, 6]  # MAD 0; MeanAD = 0.2; M = 1 / (1.253314·0.2) = 3.99
    assert modified_z_scores(values)[4] == pytest.approx(1 / (1.253314 * 0.2))
    assert outliers_mad(values) == [4]
    assert outliers_mad([5, 5, 5, 5, 5, 5, 6, 4]) == []  # M = 1/(1.2533·0.25) = 3.19


@pytest.mark.parametrize("values", [[4.0], [4.0, 9.0], [2.0] * 7])
def test_outliers_mad_small_or_constant_samples_flag_nothing(values: list[float]) -> None:
    assert outliers_mad(values) == []


def test_outliers_mad_rarely_flags_normal_data() -> None:
    rng = random.Random(42)
    values = [rng.gauss(0, 1) for _ in range(2000)]
    assert len(outliers_mad(values)) / 2000 < 0.01


def test_outliers_mad_rejects_nan_and_empty() -> None:
    with pytest.raises(ValueError):
        outliers_mad([1.0, math.nan])
    with pytest.raises(ValueError):
        outliers_mad([])


# ---------------------------------------------------------------- drift
def brute_force_spearman_p(values: Sequence[float]) -> float:
    def rho(ys: Sequence[float]) -> float:
        xs = list(range(len(ys)))
        ry = midranks(ys)
        mx, my = statistics.fmean(xs), statistics.fmean(ry)
        num = sum((a - mx) * (b - my) for a, b in zip(xs, ry, strict=True))
        den = math.sqrt(sum((a - mx) ** 2 for a in xs) * sum((b - my) ** 2 for b in ry))
        return float(num / den)

    observed = abs(rho(values))
    perms = list(itertools.permutations(values))
    return sum(abs(rho(p)) >= observed - 1e-12 for p in perms) / len(perms)


def test_drift_on_a_clear_monotone_trend() -> None:
    values = [100, 102, 104, 106, 108]
    d = drift(values)
    assert d.rho == pytest.approx(1.0)
    assert d.p_value == pytest.approx(2 / 120)  # two of the 5! orderings are as extreme
    assert d.change == pytest.approx((107 - 101) / 101)  # halves [100,102] and [106,108]
    assert d.flagged


def test_drift_exact_p_with_ties_matches_enumeration() -> None:
    values = [3.0, 1.0, 2.0, 2.0, 5.0, 4.0, 4.0]
    assert drift(values).p_value == pytest.approx(brute_force_spearman_p(values), rel=1e-12)


def test_spearman_without_ties_matches_the_d_squared_formula() -> None:
    x = [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    y = [2.0, 1, 4, 3, 6, 5, 8, 7, 10, 9]  # every d = ±1, sum d² = 10
    assert spearman(x, y).rho == pytest.approx(1 - 6 * 10 / (10 * 99))
    with pytest.raises(ValueError):
        spearman([1.0, 2.0], [1.0])


def test_drift_negligible_trend_is_not_flagged() -> None:
    values = [1000.0 + 0.1 * i for i in range(12)]  # perfectly monotone, +0.1 % overall
    d = drift(values)
    assert d.p_value < 0.05
    assert not d.flagged


def test_drift_constant_single_and_pair() -> None:
    constant = drift([4.0] * 6)
    assert (constant.rho, constant.p_value, constant.change, constant.flagged) == (0, 1, 0, False)
    single = drift([4.0])
    assert (single.rho, single.p_value, single.change, single.flagged) == (0, 1, None, False)
    pair = drift([4.0, 8.0])
    assert pair.p_value == 1.0  # two orderings, both as extreme
    assert not pair.flagged
    assert drift([0.0, 0.0, 1.0, 2.0]).change is None  # first half mean 0


def test_drift_false_alarm_rate_on_noise() -> None:
    rng = random.Random(2024)
    flagged = 0
    for _ in range(200):
        flagged += drift([rng.gauss(100, 5) for _ in range(10)]).flagged
    assert flagged / 200 <= 0.08


def test_drift_rejects_nan() -> None:
    with pytest.raises(ValueError):
        drift([1.0, math.nan, 3.0])


# ---------------------------------------------------------------- stalls
def test_stalls_find_a_stretch_of_near_zero_rate() -> None:
    times = [1.0, 2, 3, 4, 5, 6, 7, 8]
    rates = [100.0, 100, 3, 0, 100, 100, 100, 100]
    found = stalls(times, rates)
    assert len(found) == 1
    assert (found[0].start, found[0].end, found[0].min_rate) == (2.0, 4.0, 0.0)
    assert found[0].duration == 2.0


def test_stalls_respect_min_seconds_and_strict_level() -> None:
    times = [1.0, 2, 3, 4, 5, 6]
    rates = [100.0, 100, 5, 100, 100, 10]  # median 100: level 10; 10 is not below it
    one = stalls(times, rates)
    assert [(s.start, s.end) for s in one] == [(2.0, 3.0)]
    assert stalls(times, rates, min_seconds=1.5) == []


def test_stalls_at_the_edges_and_multiple() -> None:
    times = [0.5 * i for i in range(1, 13)]  # 0.5 .. 6.0
    rates = [0.0, 0, 50, 50, 0, 50, 50, 50, 50, 50, 0, 0]  # median 50, level 5
    found = stalls(times, rates, min_seconds=0.5)
    assert [(s.start, s.end) for s in found] == [(0.0, 1.0), (2.0, 2.5), (5.0, 6.0)]


def test_stalls_with_fractional_spacing() -> None:
    times = [round(0.1 * i, 10) for i in range(1, 11)]
    rates = [9.0, 9, 9, 9, 0, 0, 0, 9, 9, 9]  # low over (0.4, 0.7]: 0.3 s
    found = stalls(times, rates, min_seconds=0.3)
    assert len(found) == 1
    assert found[0].start == 0.4 and found[0].end == 0.7


def test_stalls_none_when_median_is_zero() -> None:
    assert stalls([1.0, 2, 3], [0.0, 0, 5]) == []


@pytest.mark.parametrize(
    ("times", "rates"),
    [
        ([1.0, 2.0], [1.0]),
        ([1.0, 1.0], [1.0, 2.0]),
        ([2.0, 1.0], [1.0, 2.0]),
        ([], []),
        ([1.0, 2.0], [math.nan, 1.0]),
    ],
)
def test_stalls_reject_malformed_series(times: list[float], rates: list[float]) -> None:
    with pytest.raises(ValueError):
        stalls(times, rates)


# ---------------------------------------------------------------- histograms
def test_merge_histograms_adds_counts() -> None:
    merged = merge_histograms([{100.0: 2, 200.0: 1}, {200.0: 3, 50.0: 4}, {}])
    assert merged == {50.0: 4, 100.0: 2, 200.0: 4}
    assert list(merged) == [50.0, 100.0, 200.0]
    with pytest.raises(ValueError):
        merge_histograms([{1.0: -1}])
    with pytest.raises(ValueError):
        merge_histograms([{math.nan: 1}])


def test_merged_histogram_percentiles_equal_pooled_sample_percentiles() -> None:
    rng = random.Random(8)
    bins = [float(b) for b in (1000, 1500, 2000, 3000, 5000, 8000, 20000, 100000)]
    run_a = [rng.choice(bins[:5]) for _ in range(997)]
    run_b = [rng.choices(bins, weights=[1, 1, 1, 1, 1, 2, 3, 4])[0] for _ in range(503)]
    merged = merge_histograms([Counter(run_a), Counter(run_b)])
    for p in (0, 1, 25, 50, 90, 99, 99.5, 99.9, 100):
        assert percentile_from_histogram(merged, p) == nearest_rank(run_a + run_b, p)


def test_averaging_p99s_differs_from_the_merged_p99() -> None:
    quiet = {100.0: 1000}  # p99 = 100
    spiky = {100.0: 980, 5000.0: 20}  # p99 needs 990 samples: 5000
    assert percentile_from_histogram(quiet, 99) == 100.0
    assert percentile_from_histogram(spiky, 99) == 5000.0
    averaged = (100.0 + 5000.0) / 2
    merged = percentile_from_histogram(merge_histograms([quiet, spiky]), 99)
    assert merged == 100.0  # 1980 of 2000 samples are 100: exactly 99 %
    assert merged != averaged


def test_percentile_follows_fio_convention_at_boundaries() -> None:
    bins = {1.0: 999, 2.0: 1, 3.0: 0}
    assert percentile_from_histogram(bins, 99.9) == 1.0  # 999 >= 999.0: reached at bin 1
    assert percentile_from_histogram(bins, 99.95) == 2.0
    assert percentile_from_histogram(bins, 100) == 2.0  # the empty bin 3 is skipped
    assert percentile_from_histogram({0.5: 0, 7.0: 3}, 0) == 7.0


@pytest.mark.parametrize(("bins", "p"), [({}, 50), ({1.0: 0}, 50), ({1.0: 1}, -1), ({1.0: 1}, 101)])
def test_percentile_rejects_bad_input(bins: dict[float, int], p: float) -> None:
    with pytest.raises(ValueError):
        percentile_from_histogram(bins, p)


# ---------------------------------------------------------------- numerical defects (issue 13)
def test_normal_tail_keeps_its_digits_far_out() -> None:
    from volbench.stats import normal_sf

    # Q(7) and Q(9) from Abramowitz & Stegun 26.2 (tail to 7 significant digits).
    assert normal_sf(7.0) == pytest.approx(1.279813e-12, rel=1e-6, abs=0)
    assert normal_sf(9.0) == pytest.approx(1.128588e-19, rel=1e-6, abs=0)
    assert normal_sf(-9.0) == pytest.approx(1.0)
    assert t_two_sided_p(9.0, math.inf) == pytest.approx(2 * 1.128588e-19, rel=1e-6, abs=0)


def test_identical_values_have_exactly_zero_variance() -> None:
    rng = random.Random(13)
    for _ in range(2000):
        value = rng.uniform(-1e6, 1e6)
        ci = summarize([value] * rng.randint(2, 7)).mean_ci
        assert ci is not None and ci.low == ci.high == pytest.approx(value, rel=1e-15)
    assert summarize([0.1, 0.1, 0.1]).stdev == 0.0


# ---------------------------------------------------------------- ratio of arithmetic means
def test_fieller_interval_by_hand() -> None:
    from volbench.stats.meanratio import mean_ratio

    # m_c = 10, m_b = 5, squared standard errors 1 and 1, Welch df = 2, t = 4.3027.
    found = mean_ratio([9.0, 11.0], [4.0, 6.0])
    assert found is not None and found.interval is not None
    t2 = t_quantile(0.975, 2.0) ** 2
    a = 25.0 - t2
    root = math.sqrt(50.0**2 - a * (100.0 - t2))
    assert found.ratio == 2.0
    assert found.interval.low == pytest.approx((50.0 - root) / a)
    assert found.interval.high == pytest.approx((50.0 + root) / a)
    # The ratio's interval holds every R with (m_c - R m_b)^2 <= t^2 (se_c^2 + R^2 se_b^2).
    for r in (found.interval.low, found.interval.high):
        assert (10.0 - 5.0 * r) ** 2 == pytest.approx(t2 * (1.0 + r * r))
    wide = mean_ratio([9.0, 11.0], [1.0, 9.0])  # baseline mean not clear of 0
    assert wide is not None and wide.interval is None
    assert mean_ratio([1.0], [2.0, 3.0]) is None


def test_unequal_spreads_show_the_arithmetic_means_next_to_the_geometric_verdict() -> None:
    from volbench.report.verdicts import means_note
    from volbench.stats.meanratio import mean_ratio

    # Equal arithmetic means, CV 20 % vs 1 %: the geometric means differ by ~2 %.
    rng = random.Random(0)

    def draw(cv: float) -> list[float]:
        s = math.sqrt(math.log1p(cv * cv))
        return [100.0 * math.exp(rng.gauss(-s * s / 2.0, s)) for _ in range(400)]

    c, b = draw(0.2), draw(0.01)
    verdict = compare(c, b, higher_is_better=True)
    assert verdict.verdict is Verdict.WORSE  # geometric means: lower by ~2 %
    note = means_note(verdict, mean_ratio(c, b))
    assert note.startswith(" (arithmetic means: ") and "+" in note and "-" in note
    assert means_note(compare(b, b, higher_is_better=True), mean_ratio(b, b)) == ""


def test_benjamini_hochberg_by_hand() -> None:
    from volbench.stats.multiple import benjamini_hochberg

    # m = 4, q = 5 %: thresholds 1.25 %, 2.5 %, 3.75 %, 5 %.
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == [True] * 4
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.5]) == [True, True, True, False]
    assert benjamini_hochberg([0.04, 0.3]) == [False, False]
    # A p above its own threshold still counts when a larger rank passes (step-up).
    assert benjamini_hochberg([0.026, 0.03]) == [True, True]
    with pytest.raises(ValueError):
        benjamini_hochberg([1.5])
