"""Charts as files: every chart of a report as SVG, and as PNG through headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

from volbench.report import browser
from volbench.report.charts import Chart, all_charts
from volbench.report.data import Report
from volbench.report.options import ReportOptions

_SIZE = re.compile(r'<svg[^>]*\bwidth="(\d+)"[^>]*\bheight="(\d+)"')
# Seconds per chart for Chromium to load and shoot it, on top of its start-up.
PNG_SECONDS = 5.0
PNG_SCALE = 2.0  # device pixels per CSS pixel: crisp on slides and high-density screens


def chart_size(chart: Chart) -> tuple[int, int]:
    m = _SIZE.search(chart.svg)
    return (int(m.group(1)), int(m.group(2))) if m else (800, 400)


def write_charts(
    report: Report, options: ReportOptions, directory: Path, *, png: bool = False
) -> list[Path]:
    """Write <slug>.svg (and <slug>.png) per chart into `directory`; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    charts = all_charts(report, options)
    written: list[Path] = []
    for chart in charts:
        path = directory / f"{chart.slug}.svg"
        path.write_text(chart.svg)
        written.append(path)
    if png and charts:
        with browser.page(timeout=30 + PNG_SECONDS * len(charts)) as page:
            for chart in charts:
                source = directory / f"{chart.slug}.svg"
                target = directory / f"{chart.slug}.png"
                page.open(source.resolve().as_uri())
                width, height = chart_size(chart)
                page.screenshot(target, width, height, scale=PNG_SCALE)
                written.append(target)
    return written
