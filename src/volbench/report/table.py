"""The one table builder shared by the terminal, Markdown, CSV and HTML exporters.

Cells are text, formatted once here (values as a person reads them: "1.23 ms");
`raw` keeps the numbers behind each row in base units for exporters that want them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from volbench.core import metricinfo as metrics
from volbench.core import syncmode
from volbench.core.model import Params
from volbench.core.units import format_duration, format_size, format_value, parse_size
from volbench.report import readable
from volbench.report.cases import CaseSummary
from volbench.report.data import Report
from volbench.report.percentiles import PERCENTILES
from volbench.report.verdicts import (
    DEFAULT_THRESHOLD,
    VerdictRow,
    design_note,
    percent_of_baseline,
    ratio_interval,
    table_note,
)
from volbench.stats import Interval

SUMMARY_COLUMNS = ("target", "workload", "case", "metric", "op", "n", "mean", "95 % CI",
                   "median", "median 95 % CI", "min", "max", "stdev", "cv")
VERDICT_COLUMNS = ("target", "workload", "case", "metric", "op", "n", "% of baseline",
                   "95 % CI", "±T", "p", "verdict")
HEADLINE_RULE = "IOPS for random I/O, bandwidth for sequential, tps, real/other for jobs"
RUN_COLUMNS = ("#", "target", "workload", "case", "rep", "status", "duration", "disk I/O",
               "error")
PERCENTILE_COLUMNS = ("target", "workload", "case", "latency", "op", "runs", "I/Os")


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    # Raw values behind each row (for CSV, which wants numbers, not "1.2 ms").
    raw: tuple[tuple[object, ...], ...] = ()
    numeric: tuple[bool, ...] = ()
    # Per row, a CSS-friendly class for HTML ("better", "worse", …); empty when unused.
    classes: tuple[str, ...] = ()


def case_label(params: Mapping[str, object] | object, shown: Sequence[str]) -> str:
    if not isinstance(params, Mapping):
        return ""
    return " ".join(f"{k}={params[k]}" for k in shown if k in params)


def metric_cell(s: CaseSummary) -> str:
    other = s.other_tags()
    return f"{s.metric} {other}" if other else s.metric


def interval_text(ci: Interval | None, unit: str, values: Sequence[float] = ()) -> str:
    """"[52.1k op/s, 54.6k op/s]"; "… too wide" when it reaches ten times beyond the
    runs `values` (a "too-wide" warning says why: report/readable.py)."""
    if ci is None:
        return "—"
    text = f"[{format_value(ci.low, unit)}, {format_value(ci.high, unit)}]"
    return f"{text} too wide" if readable.summary_too_wide(ci, values) else text


def _shown(s: CaseSummary, wanted: Sequence[str] | None, workload: str | None = None) -> bool:
    if workload is not None and s.workload != workload:
        return False
    return wanted is None or metrics.selected(s.metric, s.unit, wanted)


def _sorter(report: Report) -> Callable[[CaseSummary], tuple[Any, ...]]:
    """Sort key for cases: workload, parameters, metric (headline order), tags, target."""
    order = {name: i for i, name in enumerate(report.target_order())}
    work = {name: i for i, name in enumerate(report.workloads())}

    def key(s: CaseSummary) -> tuple[Any, ...]:
        label = case_label(s.params, report.varying_params(s.workload))
        return (work.get(s.workload, len(work)), _params_order(s.params), label,
                metrics.rank(s.metric), tuple(sorted(s.tags.items())),
                order.get(s.target, len(order)),
                s.target)

    return key


def _params_order(params: Params) -> tuple[tuple[str, tuple[int, float, str]], ...]:
    """Parameters in a natural order: numbers and sizes by value (4k < 64k < 1M, 2 < 16)."""
    return tuple((k, value_order(v)) for k, v in params.items())


@functools.lru_cache(maxsize=4096)
def value_order(value: object) -> tuple[int, float, str]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), "")
    try:
        return (0, float(parse_size(str(value))), str(value))
    except ValueError:
        return (1, 0.0, str(value))


def summary_table(report: Report, wanted: Sequence[str] | None = None,
                  workload: str | None = None) -> Table:
    picked = sorted((s for s in report.summaries if _shown(s, wanted, workload)),
                    key=_sorter(report))
    rows, raw = [], []
    for s in picked:
        sm = s.summary
        label = case_label(s.params, report.varying_params(s.workload))
        rows.append((s.target, s.workload, label, metric_cell(s), s.op, str(sm.n),
                     format_value(sm.mean, s.unit), interval_text(sm.mean_ci, s.unit, s.values),
                     format_value(sm.median, s.unit),
                     interval_text(sm.median_ci, s.unit, s.values),
                     format_value(sm.min, s.unit), format_value(sm.max, s.unit),
                     format_value(sm.stdev, s.unit),
                     "—" if sm.cv is None else f"{sm.cv * 100:.1f} %"))
        raw.append((s.target, s.workload, label, s.metric, s.op, sm.n, sm.mean,
                    sm.mean_ci.low if sm.mean_ci else None,
                    sm.mean_ci.high if sm.mean_ci else None, sm.median, sm.min, sm.max,
                    sm.stdev, sm.cv))
    numeric = tuple(h not in ("target", "workload", "case", "metric", "op")
                    for h in SUMMARY_COLUMNS)
    return Table("Summary", SUMMARY_COLUMNS, tuple(rows), tuple(raw), numeric)


def _verdict_rows(report: Report, wanted: Sequence[str] | None) -> list[VerdictRow]:
    rows = [v for v in report.verdicts if _shown(v.candidate, wanted)]
    key = _sorter(report)
    return sorted(rows, key=lambda v: key(v.candidate))


def is_headline_row(v: VerdictRow) -> bool:
    """A verdict of the headline family (report.family); the other rows are descriptions."""
    return v.is_verdict


def headline_table(report: Report, wanted: Sequence[str] | None = None) -> Table | None:
    """The headline verdicts (volbench.core.headline), or None when they would repeat the
    verdict table (no headline rows, or nothing else in it)."""
    rows = _verdict_rows(report, wanted)
    chosen = [v for v in rows if is_headline_row(v)]
    if not chosen or len(chosen) == len(rows):
        return None
    table = verdict_table(report, wanted, chosen)
    title = f"Headline: each target vs {report.baseline}" if report.baseline else "Headline"
    rule = HEADLINE_RULE
    if any(syncmode.of(v.candidate.params).syncs for v in chosen):
        rule += "; for a commit: sync latency and syncs/s"
    return Table(f"{title} ({rule})", table.headers, table.rows, table.raw,
                 table.numeric, table.classes)


def verdict_table(report: Report, wanted: Sequence[str] | None = None,
                  chosen: Sequence[VerdictRow] | None = None) -> Table:
    rows, classes = [], []
    for v in _verdict_rows(report, wanted) if chosen is None else chosen:
        s, c = v.candidate, v.comparison
        label = case_label(s.params, report.varying_params(s.workload))
        n = f"{s.summary.n}/{v.baseline.summary.n}"
        if c is None:
            cells = ("—", "—", "—", "—")
        else:
            cells = (percent_of_baseline(c), ratio_interval(c), f"{v.threshold * 100:g} %",
                     "—" if c.p_value is None else _p(c.p_value))
        rows.append((s.target, s.workload, label, metric_cell(s), s.op, n, *cells, v.phrase))
        classes.append(v.verdict.replace(" ", "-") if v.is_verdict else "secondary")
    numeric = tuple(h in ("n", "% of baseline", "95 % CI", "±T", "p") for h in VERDICT_COLUMNS)
    title = f"Verdicts: each target vs {report.baseline}" if report.baseline else "Verdicts"
    return Table(title, VERDICT_COLUMNS, tuple(rows), (), numeric, tuple(classes))


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def percent_table(report: Report, wanted: Sequence[str] | None = None) -> Table:
    """Seed 003's "% of local": one row per case and metric, one column per target."""
    others = [t for t in report.target_order() if t != report.baseline]
    grid: dict[tuple[Any, ...], dict[str, str]] = {}
    labels: dict[tuple[Any, ...], tuple[str, ...]] = {}
    sorter = _sorter(report)
    for v in _verdict_rows(report, wanted):
        s = v.candidate
        key = sorter(s)[:5]
        labels[key] = (s.workload, case_label(s.params, report.varying_params(s.workload)),
                       metric_cell(s), s.op)
        c = v.comparison
        grid.setdefault(key, {})[s.target] = "—" if c is None else \
            f"{percent_of_baseline(c)} {ratio_interval(c)}"
    used = [t for t in others if any(t in cells for cells in grid.values())]
    # Rows come in verdict order (dicts keep insertion order).
    rows = tuple((*labels[k], *(grid[k].get(t, "") for t in used)) for k in grid)
    headers = ("workload", "case", "metric", "op", *used)
    numeric = tuple(i >= 4 for i in range(len(headers)))
    return Table(f"% of {report.baseline} [95 % CI]", headers, rows, (), numeric)


def per_run_tables(report: Report, wanted: Sequence[str] | None = None,
                   workload: str | None = None) -> list[Table]:
    """Seed 000's per-run table: per case and metric, targets × runs in run order.

    Outliers (MAD rule) are marked with *; they stay in every statistic.
    """
    groups: dict[tuple[Any, ...], list[CaseSummary]] = {}
    sorter = _sorter(report)
    keyed = sorted(((sorter(s), s) for s in report.summaries if _shown(s, wanted, workload)),
                   key=lambda item: item[0])
    for key, s in keyed:
        groups.setdefault(key[:5], []).append(s)
    tables = []
    for items in groups.values():
        s0 = items[0]
        width = max(len(s.values) for s in items)
        label = case_label(s0.params, report.varying_params(s0.workload))
        title = " ".join(p for p in (s0.workload, label, "—", metric_cell(s0), s0.op) if p)
        rows = []
        for s in items:
            marked = {i for i, _ in s.outliers}
            cells = [format_value(v, s.unit) + (" *" if i in marked else "")
                     for i, v in enumerate(s.values)]
            rows.append((s.target, *cells, *([""] * (width - len(cells)))))
        headers = ("target", *(str(i + 1) for i in range(width)))
        numeric = (False, *([True] * width))
        tables.append(Table(title, headers, tuple(rows), (), numeric))
    return tables


def _disk_io(report: Report, index: int) -> str:
    check = report.io_checks.get(index)
    if check is None:
        return "—"
    parts = []
    for op in ("read", "write"):
        share = check.share(op)
        if share is not None:
            parts.append(f"{op[0]} {share * 100:.0f} %")
    return " ".join(parts) or "—"


def runs_table(report: Report, limit: int | None = None) -> Table:
    """Every run (or the first `limit`, plus every run that did not finish OK)."""
    rows, classes = [], []
    for i, run in enumerate(report.runs):
        ok = str(run.status) == "ok"
        if limit is not None and i >= limit and ok:
            continue
        label = case_label(run.params, report.varying_params(run.workload))
        rep = f"w{run.repetition}" if run.warmup else str(run.repetition)
        rows.append((str(i + 1), run.target, run.workload, label, rep, str(run.status),
                     format_duration(run.duration), _disk_io(report, i), run.error[:120]))
        short = report.io_checks.get(i)
        classes.append("failed" if not ok else "cache" if short and short.short else "")
    numeric = tuple(h in ("#", "duration") for h in RUN_COLUMNS)
    return Table("Runs", RUN_COLUMNS, tuple(rows), (), numeric, tuple(classes))


def percentile_table(report: Report, workload: str | None = None) -> Table:
    order = {name: i for i, name in enumerate(report.target_order())}
    chosen = [m for m in report.percentiles if workload is None or m.workload == workload]
    items = sorted(chosen, key=lambda m: (
        m.workload, _params_order(m.params), m.name, sorted(m.tags.items()),
        order.get(m.target, 99)))
    headers = (*PERCENTILE_COLUMNS, *(f"p{p:g}" for p in PERCENTILES))
    rows = []
    for m in items:
        label = case_label(m.params, report.varying_params(m.workload))
        other = " ".join(f"{k}={v}" for k, v in sorted(m.tags.items()) if k != "op")
        rows.append((m.target, m.workload, label, f"{m.name} {other}".strip(),
                     m.tags.get("op", ""), str(m.runs), str(m.samples),
                     *(format_value(m.value(p), m.unit) for p in PERCENTILES)))
    numeric = tuple(i >= 5 for i in range(len(headers)))
    return Table("Latency percentiles over all runs (merged histograms)", headers, tuple(rows),
                 (), numeric)


def environment_rows(env: Mapping[str, object]) -> list[tuple[str, str]]:
    checked = env.get("checked")
    rows: list[tuple[str, str]] = []
    if isinstance(checked, Mapping):
        for k, v in checked.items():
            if k == "tools" and isinstance(v, Mapping):
                rows += [(str(tool), str(ver)) for tool, ver in v.items() if ver]
            elif k == "memory_bytes" and isinstance(v, int):
                rows.append(("memory", format_size(v)))
            else:
                rows.append((str(k), str(v)))
    for k in ("hostname", "virtualization", "captured", "volbench"):
        if k in env:
            rows.append((k, str(env[k])))
    lab = env.get("lab")
    if isinstance(lab, Mapping):
        # Disks alike in class and size share a row (seed 000 has 25 of them under one LV).
        alike: dict[str, list[str]] = {}
        for disk in lab.get("disks", []):
            if isinstance(disk, Mapping):
                alike.setdefault(lab_disk_text(disk), []).append(str(disk.get("name")))
        for text, names in alike.items():
            label = (f"lab disk {names[0]}" if len(names) == 1
                     else f"lab disks {', '.join(names)}" if len(names) <= 4
                     else f"lab disks {names[0]} … {names[-1]} ({len(names)})")
            rows.append((label, text))
    return rows


def lab_disk_text(disk: Mapping[str, Any]) -> str:
    """A recorded lab disk in one line: `standard: iops 500, bps 50 MiB/s, write-through; 2 GiB`.
    Records without a write cache predate the choice, when every lab disk was write-back."""
    # IOPS caps before bandwidth caps, as the classes are written (stored JSON sorts keys),
    # then the bursts above them and their length.
    caps = sorted((disk.get("caps") or {}).items(),
                  key=lambda kv: (kv[0].startswith("burst_"), kv[0] == "burst_seconds",
                                  kv[0].endswith("bps"), kv[0]))
    parts = [f"{k} {format_value(v, 'B/s')}" if k.endswith("bps")
             else f"{k} {v} s" if k == "burst_seconds" else f"{k} {v}"
             for k, v in caps] or ["uncapped"]
    parts.append(str(disk.get("write_cache", "write-back")))
    size = disk.get("size")
    tail = f"; {format_value(size, 'B')}" if isinstance(size, int) else ""
    return f"{disk.get('class')}: {', '.join(parts)}{tail}"


def threshold_note(report: Report) -> str:
    custom = ", ".join(f"{k} ±{v * 100:g} %" for k, v in sorted(report.thresholds.items()))
    text = f"practical threshold ±{DEFAULT_THRESHOLD * 100:g} %"
    text = f"{text} ({custom} set in the experiment)" if custom else text
    sequential = design_note(report.design)
    text = f"{text}; {sequential}" if sequential else text
    return f"{text}; {table_note(report.verdicts)}" if report.verdicts else text


def runs_note(report: Report) -> str:
    span = report.runs_per_case()
    if span is None:
        return "no measured runs"
    low, high = span
    return f"runs per case: {low}" if low == high else f"runs per case: {low}–{high}"
