"""Which charts a report has, and their data (drawing is report.svg).

Per workload, like the seeds' hand-made charts: for each charted metric (IOPS,
throughput, latency, tps, times) one bar chart per working-set size, with the cases as
groups and the targets as bars (mean, 95 % interval, every run as a dot); latency
percentiles over all runs (merged histograms); and time series with stalls marked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from volbench.core import metricinfo as metrics
from volbench.core.model import RunResult, Series, Status, canonical_json, params_key
from volbench.core.units import format_size, format_value
from volbench.report import answer, curveview, durabilityview, forest, phaseview, svg, timeline
from volbench.report.cases import CaseSummary
from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.percentiles import PERCENTILES
from volbench.report.table import case_label, interval_text, value_order
from volbench.report.verdicts import DEFAULT_THRESHOLD, VerdictRow
from volbench.stats import Verdict

MAX_GROUPS = 12  # cases per bar chart; more are split over several charts
SERIES_PREFERENCE = ("iops", "tps", "bw")


@dataclass(frozen=True)
class Chart:
    slug: str  # file name stem, unique within a report
    title: str
    kind: str  # "bars", "percentiles", "series"
    workload: str
    drawing: svg.Drawing

    @property
    def svg(self) -> str:
        return self.drawing.text

    @property
    def width(self) -> int:
        return self.drawing.width

    @property
    def height(self) -> int:
        return self.drawing.height


def _slug(*parts: str) -> str:
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:120] or "chart"


class _Palette:
    def __init__(self, report: Report) -> None:
        self.order = report.target_order()

    def fill(self, target: str) -> str:
        return svg.color(self.order.index(target) if target in self.order else len(self.order))


def working_sets(runs: Sequence[RunResult]) -> dict[tuple[str, str], str]:
    """(workload, params) -> working-set label, from the runs' annotations or `size`."""
    out: dict[tuple[str, str], str] = {}
    for run in runs:
        key = (run.workload, params_key(run.params))
        if key in out:
            continue
        ws = run.annotations.get("working_set_bytes")
        if isinstance(ws, int | float) and ws > 0:
            out[key] = format_size(ws)
        elif "size" in run.params:
            out[key] = str(run.params["size"])
    return out


def _tone(row: VerdictRow | None, baseline: bool) -> str:
    if baseline:
        return "baseline"
    c = row.comparison if row is not None else None
    if c is None:
        return "none"
    return {Verdict.BETTER: "better", Verdict.WORSE: "worse", Verdict.EQUIVALENT: "same"}.get(
        c.verdict, "open")


def forest_charts(report: Report, workload: str) -> list[Chart]:
    """The answer as a picture (report/forest.py): one chart per workload, a group per
    headline case, a line per target: its ratio to the baseline, interval, verdict."""
    if not report.baseline or len(report.target_order()) < 2:
        return []
    palette = _Palette(report)
    groups = []
    for a in answer.case_answers(report):
        if a.workload != workload:
            continue
        rows, threshold, higher = [], 0.0, True
        for s in a.summaries:
            row = a.verdicts.get(s.target)
            c = row.comparison if row is not None else None
            base = s.target == report.baseline
            words = "baseline" if base else answer.verdict_words(row) if row is not None \
                else "no baseline to compare with"
            if row is not None:
                threshold = row.threshold
            if c is not None:
                higher = c.higher_is_better
            ci = c.ratio_ci if c is not None else None
            ratio = 1.0 if base else c.ratio if c is not None else None
            tip = f"{s.target}: {answer.figure_text(s)}; {words}" + (
                f" (ratio {ratio:.3g}" + (f", 95 % {ci.low:.3g}–{ci.high:.3g}" if ci else "")
                + ")" if ratio is not None and not base else "")
            rows.append(forest.ForestRow(s.target, ratio, ci.low if ci else None,
                                         ci.high if ci else None, words,
                                         _tone(row, base), palette.fill(s.target), tip))
        if threshold == 0.0:
            threshold = report.thresholds.get(a.summaries[0].metric, DEFAULT_THRESHOLD)
        groups.append(forest.ForestGroup(a.title, threshold, higher, tuple(rows)))
    if not groups:
        return []
    title = f"Answer — {workload}: each target against {report.baseline}"
    note = "dot: ratio of geometric means; line: 95 % interval; shaded: within the threshold"
    return [Chart(_slug(workload, "answer"), title, "forest", workload,
                  forest.forest_chart(title, note, groups))]


def bar_charts(report: Report, workload: str) -> list[Chart]:
    """Per charted metric: one chart with the working-set sizes as the outer groups, or
    one chart per size when that would hold more than MAX_GROUPS groups."""
    palette = _Palette(report)
    sizes = working_sets(report.runs)
    by_metric: dict[str, list[tuple[str, CaseSummary]]] = {}
    for s in report.summaries:
        if (
            s.workload == workload
            and metrics.info(s.metric, s.unit).chart is not None
            and metrics.is_primary(s.metric, s.unit)
        ):
            size = sizes.get((workload, params_key(s.params)), "")
            by_metric.setdefault(s.metric, []).append((size, s))
    charts = []
    for metric in sorted(by_metric, key=metrics.rank):
        items = by_metric[metric]
        varying = _varying_within([s for _, s in items])
        labels = {_group_label(size, s, varying) for size, s in items}
        if len(labels) <= MAX_GROUPS:
            charts += _bars_for(report, workload, metric, "", items, palette)
            continue
        for size in sorted({size for size, _ in items}, key=value_order):
            charts += _bars_for(
                report, workload, metric, size, [(z, s) for z, s in items if z == size], palette
            )
    return charts


def _group_label(size: str, s: CaseSummary, varying: Sequence[str]) -> str:
    case = case_label(s.params, [k for k in varying if k != "size"])
    return " ".join(p for p in (size, case, s.op, s.other_tags()) if p)


def _bars_for(
    report: Report,
    workload: str,
    metric: str,
    size: str,
    items: list[tuple[str, CaseSummary]],
    palette: _Palette,
) -> list[Chart]:
    unit = items[0][1].unit
    varying = _varying_within([s for _, s in items])
    targets = [t for t in report.target_order() if any(s.target == t for _, s in items)]
    series = [(t, palette.fill(t)) for t in targets]
    groups: dict[str, list[svg.Bar]] = {}
    ordered = sorted(
        items,
        key=lambda item: (
            value_order(item[0]),
            _order(item[1], varying),
            targets.index(item[1].target),
        ),
    )
    for z, s in ordered:
        label = _group_label("" if size else z, s, varying) or workload
        groups.setdefault(label, []).append(_bar(s, targets.index(s.target)))
    facts = metrics.info(metric, unit)
    better = "higher is better" if facts.higher_is_better else "lower is better"
    name = f"{facts.label} ({metric})" if facts.label != metric else metric
    where = f"{workload}, working set {size}" if size else workload
    outer = "" if size or not any(z for z, _ in items) else "groups by working set; "
    labels = list(groups)
    charts = []
    for part, start in enumerate(range(0, len(labels), MAX_GROUPS)):
        chunk = [
            svg.BarGroup(lab, tuple(groups[lab])) for lab in labels[start : start + MAX_GROUPS]
        ]
        suffix = f" ({part + 1})" if len(labels) > MAX_GROUPS else ""
        title = f"{name} — {where}{suffix}"
        note = f"{better}; {outer}bar: mean, whiskers: 95 % CI of the mean, dots: runs"
        charts.append(
            Chart(
                _slug(workload, metric, size, str(part + 1) if suffix else ""),
                title,
                "bars",
                workload,
                svg.bar_chart(title, note, unit, series, chunk),
            )
        )
    return charts


def _order(s: CaseSummary, varying: Sequence[str]) -> tuple[object, ...]:
    return (tuple(value_order(s.params[k]) for k in varying if k in s.params), s.op, s.other_tags())


def _varying_within(items: Sequence[CaseSummary]) -> list[str]:
    values: dict[str, set[str]] = {}
    for s in items:
        for k, v in s.params.items():
            values.setdefault(k, set()).add(repr(v))
    return [k for k, vs in values.items() if len(vs) > 1]


def _bar(s: CaseSummary, series: int) -> svg.Bar:
    sm = s.summary
    ci = sm.mean_ci
    tip = (
        f"{s.target}: mean {format_value(sm.mean, s.unit)}, 95 % CI "
        f"{interval_text(ci, s.unit)}, n = {sm.n}, runs: "
        + ", ".join(format_value(v, s.unit) for v in s.values[:20])
    )
    return svg.Bar(series, sm.mean, ci.low if ci else None, ci.high if ci else None, s.values, tip)


def percentile_charts(report: Report, workload: str, limit: int) -> list[Chart]:
    palette = _Palette(report)
    groups: dict[tuple[str, str, str], list[tuple[str, list[float | None]]]] = {}
    meta: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    order = report.target_order()
    for m in sorted(
        (m for m in report.percentiles if m.workload == workload),
        key=lambda m: order.index(m.target) if m.target in order else len(order),
    ):
        key = (params_key(m.params), m.name, canonical_json(dict(m.tags)))
        label = case_label(m.params, report.varying_params(workload))
        tags = _tags_text(m.tags)
        meta[key] = (label, f"{m.name} {tags}".strip(), m.unit)
        groups.setdefault(key, []).append((m.target, [m.value(p) for p in PERCENTILES]))
    charts = []
    for key, lines in list(groups.items())[:limit]:
        label, name, unit = meta[key]
        title = f"{name} latency percentiles — {workload} {label}".strip()
        note = "all I/Os of all runs (merged histograms); log scale"
        drawn = [(t, palette.fill(t), values) for t, values in lines]
        charts.append(
            Chart(
                _slug(workload, label, name, "percentiles"),
                title,
                "percentiles",
                workload,
                svg.percentile_chart(title, note, unit, PERCENTILES, drawn),
            )
        )
    return charts


def series_charts(report: Report, workload: str, options: ReportOptions) -> list[Chart]:
    palette = _Palette(report)
    cases: dict[tuple[str, str, str], list[svg.Trace]] = {}
    kinds: dict[tuple[str, str, str], set[str]] = {}  # which blue windows each chart has
    meta: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    shown: dict[tuple[str, str, str, str], int] = {}
    for index, run in enumerate(report.runs):
        if run.workload != workload or run.status is not Status.OK or run.warmup:
            continue
        stalls = {
            (s.series.name, canonical_json(dict(s.series.tags))): s.stalls
            for s in report.stalls.get(index, [])
        }
        for series in _preferred(run):
            tags = canonical_json(dict(series.tags))
            key = (params_key(run.params), series.name, tags)
            count = shown.get((run.target, *key), 0)
            if count >= options.max_series_runs:
                continue
            shown[(run.target, *key)] = count + 1
            label = case_label(run.params, report.varying_params(workload))
            meta[key] = (label, f"{series.name} {_tags_text(series.tags)}".strip(), series.unit)
            spans = tuple((st.start, st.end) for st in stalls.get((series.name, tags), ()))
            bursts = _windows(run, series)
            faults = (*phaseview.windows(run, series, timeline.level_text),
                      *durabilityview.cut_window(run, series))
            kinds.setdefault(key, set()).update(
                (["burst"] if bursts else []) + (["fault"] if faults else []))
            cases.setdefault(key, []).append(
                svg.Trace(
                    f"{run.target} rep {run.repetition} (#{index + 1})",
                    palette.fill(run.target),
                    series.points,
                    spans,
                    bursts + faults,
                )
            )
    charts = []
    for key, traces in list(cases.items())[: options.max_series_charts]:
        label, name, unit = meta[key]
        title = f"{name} over time — {workload} {label}".strip()
        legend = [
            (t, palette.fill(t))
            for t in report.target_order()
            if any(tr.label.startswith(f"{t} rep ") for tr in traces)
        ]
        note = (
            f"one line per run (at most {options.max_series_runs} per target); shaded: "
            "stalls below 10 % of the run's median rate"
            + _window_words(kinds.get(key, set()))
        )
        charts.append(
            Chart(
                _slug(workload, label, name, "series"),
                title,
                "series",
                workload,
                svg.series_chart(title, note, unit, legend, traces,
                                 _window_label(kinds.get(key, set()))),
            )
        )
    return charts


def _window_words(kinds: set[str]) -> str:
    """The chart note's words for its blue windows: bursts, fault phases, or both."""
    words = [w for k, w in (("burst", "burst / warm-up windows"),
                            ("fault", "fault phases (labelled with their level)"))
             if k in kinds]
    return f"; blue: {' and '.join(words)}" if words else ""


def _window_label(kinds: set[str]) -> str:
    """The legend entry of the blue windows."""
    return " / ".join(w for k, w in (("burst", "burst / warm-up"), ("fault", "fault phase"))
                      if k in kinds) or "burst / warm-up"


def _windows(run: RunResult, series: Series) -> tuple[tuple[float, float, str], ...]:
    """The run's burst or warm-up window on this series' time axis, labelled with its
    levels (volbench.stats.windows stored them as metrics with the series' tags)."""
    tags = dict(series.tags)
    found: dict[tuple[str, str], float] = {}
    for m in run.metrics:
        rest = {k: v for k, v in m.tags.items() if k != timeline.WINDOW}
        if rest == tags and m.value is not None:
            found[(m.name, m.tags.get(timeline.WINDOW, ""))] = float(m.value)
    for seconds_name, kind in timeline.SECONDS.items():
        seconds = found.get((seconds_name, ""))
        if seconds is None or len(series.points) < 2:
            continue
        step = series.points[1][0] - series.points[0][0]
        start = series.points[0][0] - step  # each sample covers the second before it
        text = f"{kind} {seconds:.0f} s"
        early, sustained = found.get((series.name, kind)), found.get((series.name, "sustained"))
        if early is not None and sustained is not None:
            text = (f"{kind}: {timeline.level_text(early, series.unit)} for {seconds:.0f} s, "
                    f"then {timeline.level_text(sustained, series.unit)} sustained")
        return ((start, start + seconds, text),)
    return ()


def _tags_text(tags: Mapping[str, str]) -> str:
    """op bare ("read"), other tags as k=v."""
    return " ".join(v if k == "op" else f"{k}={v}" for k, v in sorted(tags.items()))


def _preferred(run: RunResult) -> list[Series]:
    """One kind of series per run (IOPS before tps before bandwidth): they tell one story."""
    names = {s.name for s in run.parsed.series}
    pick = next((n for n in SERIES_PREFERENCE if n in names), min(names) if names else None)
    return [s for s in run.parsed.series if s.name == pick]


def curve_charts(report: Report, workload: str) -> list[Chart]:
    """Load curves: latency against delivered rate, one line per target."""
    palette = _Palette(report)
    return [Chart(_slug(workload, slug), title, "curve", workload, markup)
            for slug, title, markup in curveview.curve_charts(report, workload, palette.fill)]


def all_charts(report: Report, options: ReportOptions) -> list[Chart]:
    out: list[Chart] = []
    for workload in report.workloads():
        out += forest_charts(report, workload)
        out += curve_charts(report, workload)
        out += bar_charts(report, workload)
        out += percentile_charts(report, workload, options.max_series_charts)
        out += series_charts(report, workload, options)
    seen: dict[str, int] = {}
    unique = []
    for chart in out:  # slugs must be unique file names
        n = seen.get(chart.slug, 0)
        seen[chart.slug] = n + 1
        unique.append(
            chart
            if n == 0
            else replace(chart, slug=f"{chart.slug}-{n + 1}")
        )
    return unique
