"""Charts as files: every chart of a report as an SVG file, with the size it was drawn at.

PNG files are made from these by the caller (volbench.system.svgpng): the report layer never
starts a process.
"""

from __future__ import annotations

from pathlib import Path

from volbench.report.charts import all_charts
from volbench.report.data import Report
from volbench.report.options import ReportOptions


def write_charts(
    report: Report, options: ReportOptions, directory: Path
) -> list[tuple[Path, int, int]]:
    """Write <slug>.svg per chart into `directory`; returns (path, width, height) each."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, int, int]] = []
    for chart in all_charts(report, options):
        path = directory / f"{chart.slug}.svg"
        path.write_text(chart.svg)
        written.append((path, chart.width, chart.height))
    return written
