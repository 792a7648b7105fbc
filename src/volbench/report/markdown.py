"""Markdown: the same tables, ready to paste into a wiki or a blog post."""

from __future__ import annotations

from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.table import Table, runs_table, summary_table


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def render_table(table: Table) -> str:
    numeric = table.numeric or tuple(False for _ in table.headers)
    out = ["| " + " | ".join(table.headers) + " |",
           "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in table.rows]
    return "\n".join(out)


class MarkdownExporter:
    name = "markdown"
    extension = "md"

    def render(self, report: Report, options: ReportOptions) -> str:
        names = ", ".join(e.name for e in report.experiments) or "volbench results"
        parts = [f"# {names}", ""]
        summary = summary_table(report, options.metrics)
        parts += ["## Summary", "", render_table(summary) if summary.rows else "No finished runs.",
                  ""]
        if report.notes:
            parts += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
        parts += ["## Runs", "", render_table(runs_table(report)), ""]
        env = report.environment.get("checked", {})
        if env:
            parts += ["## Environment", ""]
            parts += [f"- {k}: {v}" for k, v in env.items() if k != "tools"]
            parts += [f"- {k}: {v}" for k, v in env.get("tools", {}).items() if v]
            parts.append("")
        for t in report.targets:
            steps = t.info.get("recipe", [])
            if steps:
                parts += [f"### Recipe: {t.name}", "", "```sh", *steps, "```", ""]
        return "\n".join(parts)
