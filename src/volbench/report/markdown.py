"""Markdown: the same tables, verdicts first, ready to paste into a wiki or a blog post."""

from __future__ import annotations

from volbench.report import answer, durabilityview, phaseview, targetstate
from volbench.report.curveview import curve_tables
from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.outline import walk
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
    """Every section of the outline (report/outline.py), flat: one table per section
    across all workloads."""

    name = "markdown"
    extension = "md"

    def render(self, report: Report, options: ReportOptions) -> str:
        names = ", ".join(dict.fromkeys(e.name for e in report.experiments)) \
            or "volbench results"
        facts = [runs_note(report)]
        if report.baseline and len(report.target_order()) > 1:
            facts = [f"baseline **{report.baseline}**", threshold_note(report), *facts]
        parts = [f"# {names}", "", "; ".join(facts) + ".", ""]
        return "\n".join(parts + walk(self, report, options))

    # -- sections, in the outline's order ---------------------------------------------
    def answer(self, report: Report, options: ReportOptions) -> list[str]:
        block = answer.render(report, footer=False)
        return ["## Answer", "", "```text", *block, "```", ""] if block else []

    def verdicts(self, report: Report, options: ReportOptions) -> list[str]:
        parts: list[str] = []
        headlines = headline_table(report, options.metrics)
        if headlines is not None:
            parts += _section(headlines.title, headlines)
        verdicts = verdict_table(report, options.metrics)
        parts += _section(verdicts.title, verdicts)
        if report.time_lines:  # bursts and warm-ups: what the verdicts compare
            parts += [f"- time: {_escape(t.text)}" for t in report.time_lines] + [""]
        return parts

    def warnings(self, report: Report, options: ReportOptions) -> list[str]:
        if not report.warnings:
            return []
        return ["## Warnings", "", *(f"- {_escape(w.message)}" for w in report.warnings), ""]

    def durability(self, report: Report, options: ReportOptions) -> list[str]:
        table = durabilityview.table(report.durability, {
            w: report.varying_params(w) for w in report.workloads()})
        return _section(table.title, table)

    def percent(self, report: Report, options: ReportOptions) -> list[str]:
        percent = percent_table(report, options.metrics)
        return _section(percent.title, percent)

    def phases(self, report: Report, options: ReportOptions) -> list[str]:
        table = phaseview.phase_table(report)
        return _section(table.title, table) if table.rows else []

    def charts(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        return []  # charts are files of their own here (`report --charts DIR`)

    def summary(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        summary = summary_table(report, options.metrics, workload)
        return _section("Summary", summary) if summary.rows \
            else ["## Summary", "", "No finished runs.", ""]

    def curves(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        parts: list[str] = []
        for name in [workload] if workload else report.workloads():
            for curve in curve_tables(report, name):
                parts += _section(curve.title, curve, "###")
        return parts

    def percentiles(self, report: Report, options: ReportOptions, workload: str | None
                    ) -> list[str]:
        table = percentile_table(report, workload)
        return _section(table.title, table)

    def per_run(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        per_run = per_run_tables(report, options.metrics, workload)
        if not per_run:
            return []
        parts = ["## Per-run values", "", "Runs in the order they ran; * marks an outlier "
                 "(MAD rule), kept in every statistic.", ""]
        for table in per_run:
            parts += _section(table.title, table, "###")
        return parts

    def runs(self, report: Report, options: ReportOptions) -> list[str]:
        return _section("Runs", runs_table(report))

    def environment(self, report: Report, options: ReportOptions) -> list[str]:
        parts: list[str] = []
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
        return parts
