"""Reports: one module per format, all behind one interface (`Exporter.render`)."""

from __future__ import annotations

from typing import Protocol

from volbench.report.charts_export import write_charts
from volbench.report.csvout import CsvExporter
from volbench.report.data import Report, RunExport, build, needed_metrics
from volbench.report.html import HtmlExporter
from volbench.report.jsonout import JsonExporter
from volbench.report.markdown import MarkdownExporter
from volbench.report.options import ReportOptions
from volbench.report.terminal import TerminalExporter


class Exporter(Protocol):
    name: str
    extension: str

    def render(self, report: Report, options: ReportOptions) -> str: ...


EXPORTERS: dict[str, Exporter] = {e.name: e for e in (
    TerminalExporter(), MarkdownExporter(), CsvExporter(), JsonExporter(), HtmlExporter(),
)}


def render(report: Report, fmt: str, options: ReportOptions | None = None) -> str:
    return EXPORTERS[fmt].render(report, options or ReportOptions())


__all__ = ["EXPORTERS", "Exporter", "Report", "ReportOptions", "RunExport", "build",
           "needed_metrics", "render", "write_charts"]
