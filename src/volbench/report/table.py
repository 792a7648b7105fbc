"""The one table builder shared by the terminal, Markdown and CSV exporters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volbench.report.data import HEADLINE, CaseSummary, Report
from volbench.units import format_value

SUMMARY_COLUMNS = ("target", "workload", "case", "metric", "op", "n", "mean", "median", "min",
                   "max", "stdev")


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    # Raw values behind each row (for CSV, which wants numbers, not "1.2 ms").
    raw: tuple[tuple[object, ...], ...] = ()
    numeric: tuple[bool, ...] = ()


def case_label(params: dict[str, object] | object, shown: Sequence[str]) -> str:
    if not isinstance(params, dict):
        return ""
    return " ".join(f"{k}={params[k]}" for k in shown if k in params)


def chosen(summaries: Sequence[CaseSummary], metrics: Sequence[str] | None) -> list[CaseSummary]:
    """Headline metrics (default), an explicit list, or everything (metrics == ['all'])."""
    if metrics and "all" in metrics:
        return list(summaries)
    wanted = list(metrics) if metrics else list(HEADLINE)
    rank = {name: i for i, name in enumerate(wanted)}
    return [s for s in summaries if s.metric in rank]


def summary_table(report: Report, metrics: Sequence[str] | None = None) -> Table:
    order = {name: i for i, name in enumerate(report.target_order())}
    wanted = list(metrics) if metrics and "all" not in metrics else list(HEADLINE)
    rank = {name: i for i, name in enumerate(wanted)}
    picked = chosen(report.summaries, metrics)
    picked.sort(key=lambda s: (s.workload, str(sorted(s.params.items())), rank.get(s.metric, 99),
                               s.metric, sorted(s.tags.items()), order.get(s.target, 99)))
    rows, raw = [], []
    shown_params = {w: report.varying_params(w) for w in {s.workload for s in picked}}
    for s in picked:
        other_tags = " ".join(f"{k}={v}" for k, v in s.tags.items() if k != "op")
        label = case_label(dict(s.params), shown_params[s.workload])
        sm = s.summary
        metric = s.metric + (f" {other_tags}" if other_tags else "")
        rows.append((s.target, s.workload, label, metric,
                     s.tags.get("op", ""), str(sm.n),
                     *(format_value(v, s.unit) for v in (sm.mean, sm.median, sm.min, sm.max,
                                                         sm.stdev))))
        raw.append((s.target, s.workload, label, s.metric, s.tags.get("op", ""), sm.n, sm.mean,
                     sm.median, sm.min, sm.max, sm.stdev))
    numeric = tuple(h in ("n", "mean", "median", "min", "max", "stdev") for h in SUMMARY_COLUMNS)
    return Table("Summary", SUMMARY_COLUMNS, tuple(rows), tuple(raw), numeric)


def runs_table(report: Report) -> Table:
    headers = ("#", "target", "workload", "case", "rep", "status", "duration", "error")
    rows = []
    for i, run in enumerate(report.runs, 1):
        label = case_label(dict(run.params), report.varying_params(run.workload))
        rep = f"w{run.repetition}" if run.warmup else str(run.repetition)
        rows.append((str(i), run.target, run.workload, label, rep, str(run.status),
                     format_value(run.duration, "s"), run.error[:120]))
    return Table("Runs", headers, tuple(rows))
