"""The terminal report: the answer block (report/answer.py) first; with --details, the
verdict tables, warnings and summary after it."""

from __future__ import annotations

from volbench.report import answer, durabilityview, targetstate
from volbench.report.curveview import curve_tables
from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.outline import walk
from volbench.report.table import (
    Table,
    headline_table,
    runs_note,
    summary_table,
    threshold_note,
    verdict_table,
)
from volbench.report.verdicts import DEFAULT_THRESHOLD


def render_table(table: Table) -> str:
    widths = [len(h) for h in table.headers]
    for row in table.rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = table.numeric or tuple(False for _ in table.headers)

    def line(cells: tuple[str, ...]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w)
                 for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line(table.headers), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in table.rows]
    return "\n".join(out)


def header_lines(report: Report, details: bool = True) -> list[str]:
    """Which experiments, the baseline and runs per case; with `details`, the threshold
    and what the verdicts' intervals and error rates cover (the answer block says less)."""
    lines = [f"experiment {e.id}: {e.name} ({e.status})" for e in report.experiments]
    facts = [runs_note(report)]
    if report.baseline and len(report.target_order()) > 1:
        rule = threshold_note(report) if details else \
            f"practical threshold ±{DEFAULT_THRESHOLD * 100:g} %"
        facts = [f"baseline: {report.baseline}", rule, *facts]
    lines.append("; ".join(facts))
    return lines


class TerminalExporter:
    """The outline's brief sections (report/outline.py), flat."""

    name = "table"
    extension = "txt"

    def render(self, report: Report, options: ReportOptions) -> str:
        """The answer block alone; with --details (or when there is no answer to give),
        every brief section of the outline, the answer first."""
        block = self.answer(report, options)
        full = options.details or not block
        lines = header_lines(report, full)
        lines += walk(self, report, options, brief=True) if full else block
        return "\n".join(lines) + "\n"

    # -- sections, in the outline's order (the brief ones) ----------------------------
    def answer(self, report: Report, options: ReportOptions) -> list[str]:
        block = answer.render(report, footer=not options.details)
        return ["", *block] if block else []

    def verdicts(self, report: Report, options: ReportOptions) -> list[str]:
        parts: list[str] = []
        headlines = headline_table(report, options.metrics)
        if headlines is not None:
            parts += ["", headlines.title, render_table(headlines)]
        verdicts = verdict_table(report, options.metrics)
        if verdicts.rows:
            parts += ["", verdicts.title, render_table(verdicts)]
        parts += [f"time: {t.text}" for t in report.time_lines]
        # The state each target was measured in: files have it with the environment,
        # which the terminal does not show, so it stands here with the verdicts.
        return parts + [f"target {name}: {text}"
                        for name, text in targetstate.rows(report.targets, report.runs)]

    def warnings(self, report: Report, options: ReportOptions) -> list[str]:
        if not report.warnings:
            return []
        return ["", "Warnings", *(f"- {w.message}" for w in report.warnings)]

    def durability(self, report: Report, options: ReportOptions) -> list[str]:
        table = durabilityview.table(report.durability, {
            w: report.varying_params(w) for w in report.workloads()})
        return ["", table.title, render_table(table)] if table.rows else []

    def summary(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        table = summary_table(report, options.metrics, workload)
        return ["", "Summary", render_table(table) if table.rows
                else "no finished runs to summarise"]

    def curves(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        parts: list[str] = []
        for name in [workload] if workload else report.workloads():
            for curve in curve_tables(report, name):
                parts += ["", curve.title, render_table(curve)]
        return parts

    # Sections the terminal leaves to the report files (not brief): nothing here.
    def percent(self, report: Report, options: ReportOptions) -> list[str]:
        return []

    def charts(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        return []

    def phases(self, report: Report, options: ReportOptions) -> list[str]:
        return []

    def percentiles(self, report: Report, options: ReportOptions, workload: str | None
                    ) -> list[str]:
        return []

    def per_run(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        return []

    def runs(self, report: Report, options: ReportOptions) -> list[str]:
        return []

    def environment(self, report: Report, options: ReportOptions) -> list[str]:
        return []
