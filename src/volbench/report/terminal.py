"""Plain-text tables for the terminal."""

from __future__ import annotations

from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.table import Table, summary_table


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


class TerminalExporter:
    name = "table"
    extension = "txt"

    def render(self, report: Report, options: ReportOptions) -> str:
        parts = []
        for exp in report.experiments:
            parts.append(f"experiment {exp.id}: {exp.name} ({exp.status})")
        table = summary_table(report, options.metrics)
        parts.append(render_table(table) if table.rows else "no finished runs to summarise")
        parts += [f"note: {n}" for n in report.notes]
        return "\n".join(parts) + "\n"
