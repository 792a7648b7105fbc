"""Each target against the baseline, per metric: one verdict with its interval.

The statistics are `volbench.stats.compare` (docs/statistics.md); this module decides
what is compared with what: the same workload, parameters, metric and tags on the
baseline target, only metrics with a known better direction (volbench.core.metricinfo), and the
practical threshold from the experiment's ``thresholds:`` (default 2 %).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from volbench.core import metricinfo as metrics
from volbench.core.model import ExperimentRow
from volbench.report.cases import CaseSummary
from volbench.stats import (
    Comparison,
    SequentialDesign,
    StatisticsInputError,
    Verdict,
    compare,
    verdict_text,
)
from volbench.stats.meanratio import MeanRatio, mean_ratio
from volbench.stats.multiple import benjamini_hochberg

DEFAULT_THRESHOLD = 0.02


@dataclass(frozen=True)
class VerdictRow:
    candidate: CaseSummary
    baseline: CaseSummary
    threshold: float
    # None when the pair cannot be compared (then `error` says why).
    comparison: Comparison | None
    error: str = ""
    # Ratio of arithmetic means with Fieller's interval (the verdict's ratio is of
    # geometric means); shown when the two differ beyond the threshold.
    means: MeanRatio | None = None

    @property
    def target(self) -> str:
        return self.candidate.target

    @property
    def verdict(self) -> str:
        return self.comparison.verdict.value if self.comparison else "not compared"

    @property
    def phrase(self) -> str:
        if self.comparison is None:
            return f"not compared: {self.error}"
        return phrase(self.comparison) + means_note(self.comparison, self.means)


def baseline_target(
    experiments: Sequence[ExperimentRow], target_order: Sequence[str]
) -> str | None:
    """The experiment document's `baseline:` (latest experiment first), else the first target."""
    for row in reversed(experiments):
        name = row.document.get("baseline") if isinstance(row.document, dict) else None
        if name:
            return str(name)
    return target_order[0] if target_order else None


def thresholds(experiments: Iterable[ExperimentRow]) -> dict[str, float]:
    """Per-metric practical thresholds from the documents (later experiments win)."""
    found: dict[str, float] = {}
    for row in experiments:
        doc = row.document.get("thresholds") if isinstance(row.document, dict) else None
        if isinstance(doc, Mapping):
            for name, value in doc.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1:
                    found[str(name)] = float(value)
    return found


def sequential_design(experiments: Iterable[ExperimentRow]) -> SequentialDesign | None:
    """The group-sequential design of adaptive repetition (`repeat: {min, max, until}`),
    read from the latest experiment document that has a `repeat:`; None for fixed runs.

    The defaults are experiment.py's (min 3, max = max(min, 10)). A run forced to a fixed
    count (`volbench run --runs N`) is still read as adaptive: the looks it did not take
    only make its verdicts conservative.
    """
    for row in reversed(list(experiments)):
        doc = row.document.get("repeat") if isinstance(row.document, dict) else None
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            return None
        low, high = doc.get("min", 3), doc.get("max")
        if not isinstance(low, int) or isinstance(low, bool):
            return None
        high = max(low, 10) if high is None else high
        if not isinstance(high, int) or isinstance(high, bool):
            return None
        return SequentialDesign.for_repeat(low, high)
    return None


def compare_pair(
    candidate: CaseSummary,
    baseline: CaseSummary,
    threshold: float,
    design: SequentialDesign | None = None,
) -> VerdictRow:
    higher = metrics.info(candidate.metric, candidate.unit).higher_is_better
    assert higher is not None, "only comparable metrics reach compare_pair"
    try:
        result = compare(
            candidate.values,
            baseline.values,
            higher_is_better=higher,
            threshold=threshold,
            design=design,
        )
    except StatisticsInputError as exc:
        return VerdictRow(candidate, baseline, threshold, None, str(exc))
    means = mean_ratio(candidate.values, baseline.values) if result.scale == "log" else None
    return VerdictRow(candidate, baseline, threshold, result, means=means)


def compare_sets(
    candidates: Iterable[CaseSummary],
    baselines: Iterable[CaseSummary],
    limits: Mapping[str, float],
    *,
    same_target: bool = False,
    design: SequentialDesign | None = None,
) -> list[VerdictRow]:
    """Pair each candidate case with its baseline case and compare them.

    Within one result set the baseline is another target (`same_target=False`); across
    two result sets (`volbench compare`) it is the same target in the other set.
    """
    index: dict[tuple[str, ...], CaseSummary] = {}
    for b in baselines:
        index[(b.target, *b.comparison_key) if same_target else b.comparison_key] = b
    rows = []
    for c in candidates:
        if not metrics.comparable(c.metric, c.unit, c.tags):
            continue
        base = index.get((c.target, *c.comparison_key) if same_target else c.comparison_key)
        if base is None:
            continue
        rows.append(compare_pair(c, base, limits.get(c.metric, DEFAULT_THRESHOLD), design))
    return rows


def against_baseline(
    summaries: Sequence[CaseSummary],
    baseline: str | None,
    limits: Mapping[str, float],
    design: SequentialDesign | None = None,
) -> list[VerdictRow]:
    if baseline is None:
        return []
    base = [s for s in summaries if s.target == baseline]
    others = [s for s in summaries if s.target != baseline]
    return compare_sets(others, base, limits, design=design)


def design_note(design: SequentialDesign | None) -> str:
    """How the verdicts account for adaptive repetition's looks (empty for fixed runs)."""
    if design is None:
        return ""
    return (
        f"adaptive repetition: {design.spending.value} group-sequential design over "
        f"{design.looks} looks ({design.first}–{design.last} runs), intervals are repeated "
        "95 % intervals"
    )


def _times(ratio: float) -> str:
    return f"{ratio:.0f}" if ratio >= 100 else f"{ratio:.3g}"


def _signed(value: float) -> str:
    return f"{value:+.1f}"


def phrase(c: Comparison) -> str:
    """The verdict in words: "faster: +12.3 % [+9.8, +14.9]" is the change of the metric
    itself (IOPS up, or latency down, is faster), "slower: ×3.41 [×2.9, ×4.0]" once the
    metric at least doubled; "no difference beyond ±2 %"; "inconclusive — about 7 more
    runs needed (10 per side)"."""
    if c.verdict in (Verdict.EQUIVALENT, Verdict.INCONCLUSIVE):
        return verdict_text(c)
    word = "faster" if c.verdict is Verdict.BETTER else "slower"
    ci = c.ratio_ci
    if c.ratio >= 2.0:  # "+13560 %" reads worse than "×137"
        bounds = "" if ci is None else f" [×{_times(ci.low)}, ×{_times(ci.high)}]"
        return f"{word}: ×{_times(c.ratio)}{bounds}"
    if ci is None:  # compare() always sets it for BETTER/WORSE
        return f"{word}: {_signed(c.change_pct)} %"
    low, high = ((r - 1.0) * 100.0 for r in (ci.low, ci.high))
    return f"{word}: {_signed(c.change_pct)} % [{_signed(low)}, {_signed(high)}]"


def means_note(c: Comparison, means: MeanRatio | None) -> str:
    """" (arithmetic means: -0.1 % [-4.9, +5.1])" when the ratio of arithmetic means
    reads differently from the verdict's ratio of geometric means: they differ by more
    than half the threshold, or the verdict calls a difference that the arithmetic
    means' interval does not show."""
    if means is None:
        return ""
    ci = means.interval
    apart = abs(means.ratio / c.ratio - 1.0) > c.threshold / 2.0
    unsupported = c.verdict in (Verdict.BETTER, Verdict.WORSE) and (ci is None or 1.0 in ci)
    if not (apart or unsupported):
        return ""
    bounds = "" if ci is None else \
        f" [{_signed((ci.low - 1.0) * 100.0)}, {_signed((ci.high - 1.0) * 100.0)}]"
    return f" (arithmetic means: {_signed((means.ratio - 1.0) * 100.0)} %{bounds})"


def percent_of_baseline(c: Comparison) -> str:
    return f"{c.ratio * 100:.1f} %"


def ratio_interval(c: Comparison) -> str:
    if c.ratio_ci is None:
        return "—"
    return f"[{c.ratio_ci.low * 100:.1f}, {c.ratio_ci.high * 100:.1f}]"


def table_note(rows: Sequence[VerdictRow]) -> str:
    """What the table's ratios are and what each alpha covers, with the Benjamini-Hochberg
    count when the table calls several differences."""
    text = "ratios of geometric means (arithmetic means shown where they read differently)"
    compared = [r.comparison for r in rows if r.comparison is not None]
    if len(compared) < 2:
        return text
    called = [c for c in compared if c.verdict in (Verdict.BETTER, Verdict.WORSE)]
    text += (f"; each verdict's 5 % covers that comparison alone, not the table's "
             f"{len(compared)}")
    p_values = [c.p_value for c in compared if c.p_value is not None]
    if called and len(p_values) == len(compared):
        kept = benjamini_hochberg(p_values)
        survive = sum(k for k, c in zip(kept, compared, strict=True)
                      if c.verdict in (Verdict.BETTER, Verdict.WORSE))
        text += (f"; at a 5 % false discovery rate (Benjamini-Hochberg) {survive} of the "
                 f"{len(called)} differences stand")
    return text
