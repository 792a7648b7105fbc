"""Each target against the baseline, per metric: one verdict with its interval.

The statistics are `volbench.stats.compare` (docs/statistics.md); this module decides
what is compared with what: the same workload, parameters, metric and tags on the
baseline target, only metrics with a known better direction (volbench.core.metricinfo), and the
practical threshold from the experiment's ``thresholds:`` (default 2 %).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from volbench.core import metricinfo as metrics
from volbench.core.model import ExperimentRow
from volbench.report import advice, readable
from volbench.report.cases import CaseSummary
from volbench.report.family import HEADLINE, SAME, SECONDARY, Family, family_levels, roles
from volbench.stats import (
    Comparison,
    SequentialDesign,
    StatisticsInputError,
    Verdict,
    compare,
    verdict_text,
)
from volbench.stats.meanratio import MeanRatio, mean_ratio

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
    # One comparison, one verdict (report.family): HEADLINE rows are the verdicts, judged
    # together as `family` (Holm); SECONDARY rows are descriptions at 95 % each; SAME
    # rows repeat the measurement `same_as` (bw beside IOPS at one block size).
    role: str = HEADLINE
    same_as: str = ""
    family: Family | None = None
    # The run-to-run spread behind an undecided verdict (report.advice.Noise).
    noise: advice.Noise | None = None

    @property
    def target(self) -> str:
        return self.candidate.target

    @property
    def is_verdict(self) -> bool:
        """True for a headline row: a verdict of the family, not a description."""
        return self.role == HEADLINE

    @property
    def verdict(self) -> str:
        return self.comparison.verdict.value if self.comparison else "not compared"

    @property
    def ruled_out(self) -> tuple[float, float] | None:
        """The changes (in %) beyond which the data rule out a difference, low and high:
        the ends of the verdict's interval (None without one)."""
        ci = self.comparison.ratio_ci if self.comparison else None
        return None if ci is None else ((ci.low - 1.0) * 100.0, (ci.high - 1.0) * 100.0)

    @property
    def phrase(self) -> str:
        if self.comparison is None:
            return f"not compared: {self.error}"
        c = self.comparison
        if self.role == SAME:
            return f"same measurement as {self.same_as}, judged there"
        if self.role == SECONDARY:
            return f"secondary, not a verdict: {change_text(c)}" + means_note(c, self.means)
        text = phrase(c) + means_note(c, self.means)
        return text + advice.undecided_note(c, self.noise)


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
    alpha: float = 0.05,
) -> VerdictRow:
    higher = metrics.info(candidate.metric, candidate.unit).higher_is_better
    assert higher is not None, "only comparable metrics reach compare_pair"
    try:
        result = compare(
            candidate.values,
            baseline.values,
            higher_is_better=higher,
            threshold=threshold,
            alpha=alpha,
            design=design,
        )
    except StatisticsInputError as exc:
        return VerdictRow(candidate, baseline, threshold, None, str(exc))
    result = replace(result, shared_runs=shared_runs(candidate, baseline))
    means = mean_ratio(candidate.values, baseline.values) if result.scale == "log" else None
    return VerdictRow(candidate, baseline, threshold, result, means=means)


def shared_runs(candidate: CaseSummary, baseline: CaseSummary) -> tuple[int, int] | None:
    """Both sides' (runs with company, runs with an activity record), or None when no run
    of either side has a record: an undecided verdict then promises no number of runs
    where other work shared the machine (stats.Comparison.promises_runs)."""
    known = [s.company for s in (candidate, baseline) if s.company is not None]
    if not known:
        return None
    return sum(k[0] for k in known), sum(k[1] for k in known)


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
    rows = judge_family(compare_sets(others, base, limits, design=design), design)
    return advice.with_noise(rows, summaries)


def judge_family(rows: Sequence[VerdictRow], design: SequentialDesign | None = None
                 ) -> list[VerdictRow]:
    """The rows with their roles, the headline rows re-judged at Holm's levels as one
    family (report.family); guarantees any false headline "faster/slower" in at most 5 %
    of tables of identical targets, and that each interval agrees with its verdict."""
    found = roles([r.candidate for r in rows])
    heads = [i for i, (role, _) in enumerate(found) if role == HEADLINE]
    judged: dict[tuple[int, float], VerdictRow] = {}

    def at(j: int, level: float) -> VerdictRow:
        row = rows[heads[j]]
        if (j, level) not in judged:
            judged[(j, level)] = row if row.comparison is None else compare_pair(
                row.candidate, row.baseline, row.threshold, design, alpha=level)
        return judged[(j, level)]

    def significant(j: int, level: float) -> bool:
        c = at(j, level).comparison
        return c is not None and c.significant

    p_values = [c.p_value if (c := rows[i].comparison) else None for i in heads]
    family, levels = family_levels(p_values, significant)
    out = [replace(r, role=role, same_as=same) for r, (role, same) in zip(rows, found,
                                                                          strict=True)]
    for j, i in enumerate(heads):
        out[i] = replace(at(j, levels[j]), role=HEADLINE, family=family)
    return out


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
    return f"{word}: {change_text(c)}"


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
    change = _signed((means.ratio - 1.0) * 100.0)
    if ci is None:
        return f" (arithmetic means: {change} %)"
    low, high = _signed((ci.low - 1.0) * 100.0), _signed((ci.high - 1.0) * 100.0)
    if readable.ratio_too_wide(ci):  # issue 32: "+300.5 % [-1000.9, +1602.4]"
        return (f" (arithmetic means: {change} %; their interval, {low} % to {high} %, is "
                "too wide to read)")
    return f" (arithmetic means: {change} % [{low}, {high}])"


def percent_of_baseline(c: Comparison) -> str:
    return f"{c.ratio * 100:.1f} %"


def ratio_interval(c: Comparison) -> str:
    if c.ratio_ci is None:
        return "—"
    text = f"[{c.ratio_ci.low * 100:.1f}, {c.ratio_ci.high * 100:.1f}]"
    return f"{text} too wide" if readable.ratio_too_wide(c.ratio_ci) else text


def change_text(c: Comparison) -> str:
    """The change with its interval, without a verdict word: "+12.3 % [+9.8, +14.9]",
    "×3.41 [×2.9, ×4.0]" once the metric at least doubled."""
    ci = c.ratio_ci
    if c.ratio >= 2.0:  # "+13560 %" reads worse than "×137"
        bounds = "" if ci is None else f" [×{_times(ci.low)}, ×{_times(ci.high)}]"
        return f"×{_times(c.ratio)}{bounds}"
    if ci is None:
        return f"{_signed(c.change_pct)} %"
    low, high = ((r - 1.0) * 100.0 for r in (ci.low, ci.high))
    return f"{_signed(c.change_pct)} % [{_signed(low)}, {_signed(high)}]"


def table_note(rows: Sequence[VerdictRow]) -> str:
    """What the table's ratios are and how the verdicts share their error: the family's
    statement (Holm over the headline comparisons), or one verdict at 5 %."""
    text = "ratios of geometric means (arithmetic means shown where they read differently)"
    family = next((r.family for r in rows if r.family is not None), None)
    if family is None:
        return text
    return f"{text}; {family.header()}"
