"""Markdown: the same tables, verdicts first, ready to paste into a wiki or a blog post."""

from __future__ import annotations

from volbench.report import targetstate
from volbench.report.curveview import curve_tables
from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.table import (
    Table,
    environment_rows,
    headline_table,
    per_run_tables,
    percent_table,
    percentile_table,
    runs_note,
    runs_table,
    summary_table,
    threshold_note,
    verdict_table,
)


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def render_table(table: Table) -> str:
    numeric = table.numeric or tuple(False for _ in table.headers)
    out = ["| " + " | ".join(_escape(h) for h in table.headers) + " |",
           "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in table.rows]
    return "\n".join(out)


def _section(title: str, table: Table, level: str = "##") -> list[str]:
    return [f"{level} {title}", "", render_table(table), ""] if table.rows else []


class MarkdownExporter:
    name = "markdown"
    extension = "md"

    def render(self, report: Report, options: ReportOptions) -> str:
        names = ", ".join(dict.fromkeys(e.name for e in report.experiments)) \
            or "volbench results"
        facts = [runs_note(report)]
        if report.baseline and len(report.target_order()) > 1:
            facts = [f"baseline **{report.baseline}**", threshold_note(report), *facts]
        parts = [f"# {names}", "", "; ".join(facts) + ".", ""]
        headlines = headline_table(report, options.metrics)
        if headlines is not None:
            parts += _section(headlines.title, headlines)
        verdicts = verdict_table(report, options.metrics)
        parts += _section(verdicts.title, verdicts)
        if report.time_lines:  # bursts and warm-ups: what the verdicts compare
            parts += [f"- time: {_escape(t.text)}" for t in report.time_lines] + [""]
        if report.warnings:
            parts += ["## Warnings", ""] + [f"- {_escape(w.message)}" for w in report.warnings]
            parts.append("")
        percent = percent_table(report, options.metrics)
        parts += _section(percent.title, percent)
        summary = summary_table(report, options.metrics)
        parts += _section("Summary", summary) if summary.rows \
            else ["## Summary", "", "No finished runs.", ""]
        parts += _section(percentile_table(report).title, percentile_table(report))
        for workload in report.workloads():
            for curve in curve_tables(report, workload):
                parts += _section(curve.title, curve, "###")
        per_run = per_run_tables(report, options.metrics)
        if per_run:
            parts += ["## Per-run values", "", "Runs in the order they ran; * marks an outlier "
                      "(MAD rule), kept in every statistic.", ""]
            for table in per_run:
                parts += _section(table.title, table, "###")
        parts += _section("Runs", runs_table(report))
        env = environment_rows(report.environment)
        if env:
            parts += ["## Environment", ""] + [f"- {k}: {_escape(v)}" for k, v in env] + [""]
        states = targetstate.rows(report.targets, report.runs)
        if states:
            parts += ["## Target state", "", *(f"- {n}: {_escape(v)}" for n, v in states), ""]
        for t in report.targets:
            steps = t.info.get("recipe", [])
            if steps:
                parts += [f"### Recipe: {t.name}", "", "```sh", *steps, "```", ""]
        return "\n".join(parts)
