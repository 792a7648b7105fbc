"""Compare a candidate layout with a baseline and give one verdict.

Method (see docs/statistics.md):

* Effect: the ratio candidate / baseline. When every value is positive it is the ratio
  of geometric means, from Welch's t test on log-values: ratio = exp(d), interval
  exp(d ± t·se). Benchmark results are positive and right-skewed, and their differences
  are relative, which is what logs make additive. If any value is zero or negative, logs
  do not exist, so the test runs on the raw values and the difference of means is turned
  into a ratio by dividing by the baseline mean (treated as fixed; the interval then
  ignores the baseline mean's own uncertainty, a documented approximation).
* Verdict, first rule that applies:
  1. EQUIVALENT when the (1 - 2·alpha) interval (90 %) lies inside the band
     (1 - threshold, 1 + threshold): the two one-sided tests (TOST, Schuirmann 1987)
     both reject at alpha. A significant difference whose whole 90 % interval lies
     inside the band is EQUIVALENT too ("no difference beyond ±T %": real but too small
     to matter); `significant` stays True.
  2. BETTER or WORSE when the (1 - alpha) interval (95 %) excludes ratio 1; the
     direction follows `higher_is_better`.
  3. INCONCLUSIVE otherwise, with an estimate of the runs per side that would decide.
* With fewer than 2 values on a side nothing can be estimated: INCONCLUSIVE with
  `runs_needed` = MIN_RUNS (3).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from volbench.stats.distributions import t_sf
from volbench.stats.power import RunsRange, runs_to_decide
from volbench.stats.ranks import mann_whitney
from volbench.stats.sequential import SequentialDesign
from volbench.stats.summary import Interval
from volbench.stats.validation import (
    StatisticsInputError,
    check_probability,
    finite_sample,
    sample_variance,
)
from volbench.stats.welch import WelchTest, welch_satterthwaite_df, welch_t_test

MIN_RUNS = 3
DEFAULT_MAX_RUNS = 1000


class Verdict(enum.StrEnum):
    """What a comparison concluded: equivalent (the difference's interval lies inside the
    threshold band), else better or worse (the interval excludes no difference; in the
    metric's own direction of better), else inconclusive (neither, at the runs there are)."""

    BETTER = "better"
    WORSE = "worse"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"


class Scale(enum.StrEnum):
    """How the ratio was estimated: from log-values, or from raw values (zeros/negatives)."""

    LOG = "log"
    RAW = "raw"


@dataclass(frozen=True)
class Comparison:
    """Candidate versus baseline for one metric.

    `ratio` is candidate / baseline (geometric means on the LOG scale, arithmetic means on
    the RAW scale); `ratio_ci` its (1 - alpha) interval, `equivalence_ci` its (1 - 2·alpha)
    interval used for equivalence. `p_value` is Welch's two-sided p for "no difference",
    `equivalence_p_value` the TOST p for "difference beyond the threshold";
    `mann_whitney_p` is a distribution-free second opinion. `runs_needed` (INCONCLUSIVE
    only) is the estimated total number of runs per side that would decide; when
    `runs_needed_capped` is True, not even `runs_needed` runs would, at the current spread.
    Interval and p fields are None when a side has fewer than 2 values.
    """

    verdict: Verdict
    higher_is_better: bool
    ratio: float
    ratio_ci: Interval | None
    equivalence_ci: Interval | None
    p_value: float | None
    equivalence_p_value: float | None
    mann_whitney_p: float
    significant: bool
    df: float | None
    scale: Scale
    threshold: float
    alpha: float
    n_candidate: int
    n_baseline: int
    runs_needed: int | None
    runs_needed_capped: bool = False
    # The runs per side that would do at the observed spread (runs_needed is at the
    # spread's upper confidence bound): the low end of the range shown.
    runs_needed_low: int | None = None
    # Sequential designs (adaptive repetition): the look this comparison is, of how many,
    # and the two-sided level its difference test used (ratio_ci is at 1 - that level, a
    # repeated confidence interval; equivalence_ci at the level of the 2·alpha design).
    look: int | None = None
    looks: int | None = None
    nominal_alpha: float | None = None
    # (runs during which other work shared the machine, runs with an activity record), of
    # both sides together; set by the report layer, which reads the records (stats sees
    # only the values). None: not known (no records, or a hand-built comparison).
    shared_runs: tuple[int, int] | None = None

    @property
    def change_pct(self) -> float:
        """Signed relative change of the candidate, in percent ((ratio - 1) · 100)."""
        return (self.ratio - 1.0) * 100.0

    @property
    def had_company(self) -> bool:
        """True when other work shared the machine during at least one of the runs."""
        return self.shared_runs is not None and self.shared_runs[0] > 0

    @property
    def beyond_cap(self) -> bool:
        """True when not even the observed spread would decide within the cap ("more
        than 1000 runs per side needed": true on a busy host too, where a slow mode not
        yet seen only adds spread)."""
        return self.runs_needed_capped and self.runs_needed_low is None

    @property
    def promises_runs(self) -> bool:
        """True when an INCONCLUSIVE verdict states how many runs would decide: the
        spread's bound is within the cap and no run had company. On a busy host a slow
        run is a second mode the first runs often do not show (20 % of runs slowed to
        40-90 %: a number printed from quiet-looking runs decided 0-17 % of the time,
        docs/statistics.md), and no bound from the runs alone covers it."""
        return (self.verdict is Verdict.INCONCLUSIVE and self.runs_needed is not None
                and not self.runs_needed_capped and not self.had_company)


@dataclass(frozen=True)
class _Effect:
    """Both samples on the scale where the test runs, and how to read a difference there."""

    scale: Scale
    candidate: list[float]
    baseline: list[float]
    band: tuple[float, float]  # equivalence band for the difference on this scale
    baseline_mean: float
    # The lowest ratio there can be: 0 when no candidate value is negative (a rate with a
    # stalled run at 0 has a ratio of at least 0; on the raw scale the interval's low end
    # reached -76.7 %, "-176.7 %" as a change, issue 32), else None.
    floor: float | None = None

    def to_ratio(self, difference: float) -> float:
        if self.scale is Scale.LOG:
            return math.exp(difference)
        return 1.0 + difference / self.baseline_mean

    def ratio_interval(self, welch: WelchTest, level: float) -> Interval:
        low, high = welch.interval(level)
        low_ratio = self.to_ratio(low)
        if self.floor is not None:
            low_ratio = max(self.floor, low_ratio)
        return Interval(low_ratio, self.to_ratio(high), level)


def _effect(candidate: list[float], baseline: list[float], threshold: float) -> _Effect:
    baseline_mean = fmean(baseline)
    if all(v > 0.0 for v in candidate) and all(v > 0.0 for v in baseline):
        band = (math.log1p(-threshold), math.log1p(threshold))
        logs_c = [math.log(v) for v in candidate]
        logs_b = [math.log(v) for v in baseline]
        return _Effect(Scale.LOG, logs_c, logs_b, band, baseline_mean)
    if baseline_mean <= 0.0:
        raise StatisticsInputError(
            f"baseline mean is {baseline_mean!r}: a relative comparison needs a positive "
            "baseline; compare absolute differences for metrics that can be zero or negative"
        )
    band = (-threshold * baseline_mean, threshold * baseline_mean)
    return _Effect(Scale.RAW, candidate, baseline, band, baseline_mean,
                   0.0 if min(candidate) >= 0.0 else None)


def _check_settings(threshold: float, alpha: float, max_runs: int) -> None:
    check_probability(threshold, "threshold")
    check_probability(alpha, "alpha", high=0.5)
    if max_runs < MIN_RUNS:
        raise StatisticsInputError(f"max_runs must be at least {MIN_RUNS}, got {max_runs}")


def _runs_range(
    effect: _Effect, alpha: float, design: SequentialDesign | None, start: int, max_runs: int
) -> RunsRange:
    """Runs per side that decide with 80 % power whatever the true difference, at the
    observed spread and at its upper 99.9 % confidence bound (volbench.stats.power)."""
    var_c = sample_variance(effect.candidate)
    var_b = sample_variance(effect.baseline)
    df = welch_satterthwaite_df(var_c, len(effect.candidate), var_b, len(effect.baseline))

    def levels(n: int) -> tuple[float, float]:
        found = _levels(alpha, design, n)
        return found.difference, found.equivalence

    return runs_to_decide(var_c, var_b, effect.band, df, levels, start=start, cap=max_runs)


def runs_needed(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    threshold: float = 0.02,
    alpha: float = 0.05,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> int:
    """Runs per side at which the comparison is decided with 80 % power, whatever the
    true difference, at the upper 99.9 % confidence bound of the spread
    (volbench.stats.power). Returns MIN_RUNS when a side has fewer than 2 values and
    `max_runs` when even that many would not do.
    """
    c = finite_sample(candidate, "candidate")
    b = finite_sample(baseline, "baseline")
    _check_settings(threshold, alpha, max_runs)
    if min(len(c), len(b)) < 2:
        return MIN_RUNS
    needed = _runs_range(_effect(c, b, threshold), alpha, None, MIN_RUNS, max_runs).high
    return max_runs if needed is None else max(needed, MIN_RUNS)


def _tost_p(welch: WelchTest, band: tuple[float, float]) -> float:
    """p-value of the two one-sided tests: max of the two one-sided p-values."""
    d, se = welch.difference, welch.standard_error
    if se == 0.0:
        return 0.0 if band[0] < d < band[1] else 1.0
    return max(t_sf((d - band[0]) / se, welch.df), t_sf((band[1] - d) / se, welch.df))


@dataclass(frozen=True)
class _Levels:
    """Two-sided levels of the difference test and of the equivalence interval."""

    difference: float
    equivalence: float


def _levels(alpha: float, design: SequentialDesign | None, n: int) -> _Levels:
    if design is None:
        return _Levels(alpha, 2.0 * alpha)
    return _Levels(design.nominal_alpha(n, alpha), design.nominal_alpha(n, 2.0 * alpha))


def _classify(
    welch: WelchTest, effect: _Effect, levels: _Levels, higher_is_better: bool
) -> tuple[Verdict, bool]:
    """Apply the rule order (equivalence, then significance) on the test's own scale."""
    low, high = welch.interval(1.0 - levels.difference)
    significant = low > 0.0 or high < 0.0
    equivalence_low, equivalence_high = welch.interval(1.0 - levels.equivalence)
    if effect.band[0] < equivalence_low and equivalence_high < effect.band[1]:
        return Verdict.EQUIVALENT, significant
    if significant:
        improved = (welch.difference > 0.0) == higher_is_better
        return (Verdict.BETTER if improved else Verdict.WORSE), significant
    return Verdict.INCONCLUSIVE, significant


def compare(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    threshold: float = 0.02,
    alpha: float = 0.05,
    max_runs: int = DEFAULT_MAX_RUNS,
    design: SequentialDesign | None = None,
) -> Comparison:
    """Compare two samples of one metric; see the module docstring for the method.

    With a `design` (adaptive repetition) the comparison is one look of a group-sequential
    design (volbench.stats.sequential): the look is set by the smaller side's runs, and
    both the verdict and the intervals use that look's nominal levels, so the overall
    error rates stay at alpha however many looks were taken.
    """
    c = finite_sample(candidate, "candidate")
    b = finite_sample(baseline, "baseline")
    _check_settings(threshold, alpha, max_runs)
    effect = _effect(c, b, threshold)
    fewest = min(len(c), len(b))
    levels = _levels(alpha, design, fewest)
    welch = welch_t_test(effect.candidate, effect.baseline) if fewest >= 2 else None
    verdict, significant = Verdict.INCONCLUSIVE, False
    runs: int | None = MIN_RUNS
    runs_low: int | None = None
    capped = False
    if welch is not None:
        verdict, significant = _classify(welch, effect, levels, higher_is_better)
        runs = None
        if verdict is Verdict.INCONCLUSIVE:
            estimate = _runs_range(effect, alpha, design, fewest + 1, max_runs)
            capped = estimate.high is None
            runs = max_runs if estimate.high is None else estimate.high
            runs_low = None if estimate.low is None else estimate.low
    point = fmean(effect.candidate) - fmean(effect.baseline)
    return Comparison(
        verdict=verdict,
        higher_is_better=higher_is_better,
        ratio=effect.to_ratio(point),
        ratio_ci=None if welch is None else effect.ratio_interval(welch, 1.0 - levels.difference),
        equivalence_ci=(
            None if welch is None else effect.ratio_interval(welch, 1.0 - levels.equivalence)
        ),
        p_value=None if welch is None else welch.p_value,
        equivalence_p_value=None if welch is None else _tost_p(welch, effect.band),
        mann_whitney_p=mann_whitney(c, b).p_value,
        significant=significant,
        df=None if welch is None else welch.df,
        scale=effect.scale,
        threshold=threshold,
        alpha=alpha,
        n_candidate=len(c),
        n_baseline=len(b),
        runs_needed=runs,
        runs_needed_capped=capped,
        runs_needed_low=runs_low,
        look=None if design is None else design.look(fewest),
        looks=None if design is None else design.looks,
        nominal_alpha=None if design is None else levels.difference,
    )


def decide(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    threshold: float = 0.02,
    alpha: float = 0.05,
    design: SequentialDesign | None = None,
) -> Verdict:
    """The verdict `compare` would give, without its advice and second opinions.

    Adaptive repetition asks this after every round for every metric, and the calibration
    simulations ask it millions of times: the Mann-Whitney p and the runs-needed search
    are what makes `compare` slow, and the verdict needs neither.
    """
    c = finite_sample(candidate, "candidate")
    b = finite_sample(baseline, "baseline")
    _check_settings(threshold, alpha, DEFAULT_MAX_RUNS)
    fewest = min(len(c), len(b))
    if fewest < 2:
        return Verdict.INCONCLUSIVE
    effect = _effect(c, b, threshold)
    welch = welch_t_test(effect.candidate, effect.baseline)
    return _classify(welch, effect, _levels(alpha, design, fewest), higher_is_better)[0]


def is_decided(comparison: Comparison) -> bool:
    """True once the verdict is BETTER, WORSE or EQUIVALENT: adaptive repetition can stop."""
    return comparison.verdict is not Verdict.INCONCLUSIVE


def _pct(value: float) -> str:
    return f"{value:.1f}"


def verdict_text(comparison: Comparison, metric_label: str = "") -> str:
    """One line for a report, e.g. "latency lower by 12.3 % [9.8, 14.9] — better".

    EQUIVALENT reads "no difference beyond ±2 %"; INCONCLUSIVE says how many more runs
    would decide ("inconclusive — about 7 more runs needed (10 per side)"), at the
    spread's upper 99.9 % bound (stats.power), or that no number can be promised: the
    bound would not decide within the cap, or other work shared the machine during a run
    (`shared_runs`). The number at the observed spread (`runs_needed_low`) is no promise
    and is not printed.
    """
    c = comparison
    label = metric_label.strip()
    prefix = f"{label}: " if label else ""
    if c.verdict is Verdict.EQUIVALENT:
        return f"{prefix}no difference beyond ±{c.threshold * 100:g} %"
    if c.verdict is Verdict.INCONCLUSIVE:
        runs = c.runs_needed if c.runs_needed is not None else MIN_RUNS
        if c.beyond_cap:
            return f"{prefix}inconclusive — more than {runs} runs per side needed"
        if c.had_company and c.shared_runs is not None:
            busy, recorded = c.shared_runs
            during = f"all {recorded} runs" if busy == recorded else \
                f"{busy} of {recorded} runs"
            return (f"{prefix}inconclusive — no number of runs can be promised: other work "
                    f"shared the machine during {during}, and a slow run it causes may not "
                    "have shown yet")
        if c.runs_needed_capped:
            # The observed spread would decide within the cap, its upper bound would not:
            # a number printed here is one the first runs' quiet look made (issue 32).
            return (f"{prefix}inconclusive — no number of runs can be promised from "
                    f"{min(c.n_candidate, c.n_baseline)} per side: their spread is too "
                    "uncertain")
        more = max(1, runs - min(c.n_candidate, c.n_baseline))
        plural = "run" if more == 1 else "runs"
        return f"{prefix}inconclusive — about {more} more {plural} needed ({runs} per side)"
    if c.ratio_ci is None:  # only hand-built Comparisons get here
        raise StatisticsInputError("a BETTER/WORSE comparison must carry ratio_ci")
    direction = "higher" if c.ratio > 1.0 else "lower"
    bounds = sorted(abs(r - 1.0) * 100.0 for r in (c.ratio_ci.low, c.ratio_ci.high))
    magnitude = abs(c.ratio - 1.0) * 100.0
    subject = f"{label} " if label else ""
    return (
        f"{subject}{direction} by {_pct(magnitude)} % [{_pct(bounds[0])}, {_pct(bounds[1])}]"
        f" — {c.verdict.value}"
    )
