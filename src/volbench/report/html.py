"""HTML: one self-contained page (inline CSS, SVG and a few lines of JS) that works offline.

The order is the outline's (report/outline.py), as in every format; the per-workload
sections (charts, summary, load curves, latency percentiles, per-run values) are
grouped under each workload's heading.
"""

from __future__ import annotations

import html
from importlib import resources

from volbench import __version__
from volbench.report import answer, charts, curveview, durabilityview, phaseview, targetstate
from volbench.report.data import Report
from volbench.report.options import ReportOptions
from volbench.report.outline import OUTLINE, walk
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

WIDE = ("verdict", "error")  # columns whose text may wrap


def _asset(name: str) -> str:
    return resources.files("volbench.report").joinpath("assets", name).read_text()


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower() or "x"


class _Ids:
    """Unique element ids within the page."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, base: str) -> str:
        candidate, n = _anchor(base), 1
        while candidate in self.used:
            n += 1
            candidate = f"{_anchor(base)}-{n}"
        self.used.add(candidate)
        return candidate


def render_table(table: Table, table_id: str, *, filter_box: bool = False) -> str:
    numeric = table.numeric or tuple(False for _ in table.headers)
    out = []
    if filter_box:
        out.append(
            f'<input class="filter" type="search" data-table="{table_id}" '
            f'placeholder="filter rows (words)" aria-label="filter {esc(table.title)}">'
        )
    out.append(f'<div class="scroll"><table id="{table_id}"><thead><tr>')
    out += [f"<th>{esc(h)}</th>" for h in table.headers]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(table.rows):
        css = table.classes[i] if i < len(table.classes) and table.classes[i] else ""
        out.append(f'<tr class="{css}">' if css else "<tr>")
        for cell, num, head in zip(row, numeric, table.headers, strict=True):
            cls = "num" if num else "wrap" if head in WIDE else ""
            out.append(f'<td class="{cls}">{esc(cell)}</td>' if cls else f"<td>{esc(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


class HtmlExporter:
    """Every section of the outline (report/outline.py); the per-workload ones grouped
    under each workload's heading, with its charts."""

    name = "html"
    extension = "html"

    def render(self, report: Report, options: ReportOptions) -> str:
        page = _Page(report)
        names = ", ".join(dict.fromkeys(e.name for e in report.experiments)) or "volbench"
        sections = walk(page, report, options, grouping=page)
        body = [
            f"<header><h1>{esc(names)}</h1>",
            f'<p class="facts">{esc(self._facts(report))}</p></header>',
            page.nav(report),
            *sections,
            f"<footer>volbench {esc(__version__)} · self-contained report: no network "
            "needed · values in tables are rounded; JSON/CSV exports keep base units"
            "</footer>",
        ]
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>volbench: {esc(names)}</title><style>{_asset('report.css')}</style>"
            "</head><body>\n"
            + "\n".join(body)
            + f"\n<script>{_asset('report.js')}</script></body></html>\n"
        )

    @staticmethod
    def _facts(report: Report) -> str:
        facts = [f"experiment {e.id} ({e.status})" for e in report.experiments]
        if report.baseline and len(report.target_order()) > 1:
            facts += [f"baseline: {report.baseline}", threshold_note(report)]
        facts.append(runs_note(report))
        return " · ".join(facts)


class _Page:
    """One page being rendered: its element ids, and which sections it has (for the
    navigation bar, which follows the outline)."""

    def __init__(self, report: Report) -> None:
        self.ids = _Ids()
        self.shown: set[str] = set()

    def nav(self, report: Report) -> str:
        links: list[tuple[str, str]] = []
        for part in OUTLINE:
            if part.per_workload:
                if not any(a.startswith("workload-") for a, _ in links):
                    links += [(f"workload-{_anchor(w)}", f"Workload {w}")
                              for w in report.workloads()]
            elif part.key in self.shown:
                links.append((part.key, part.title))
        return "<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in links) + "</nav>"

    def _section(self, key: str, title: str, inner: list[str]) -> list[str]:
        self.shown.add(key)
        return [f'<section id="{key}"><h2>{esc(title)}</h2>', *inner, "</section>"]

    # -- the grouping of per-workload sections -------------------------------------------
    def workload_open(self, report: Report, workload: str) -> list[str]:
        return [f'<section id="{self.ids("workload-" + workload)}">'
                f"<h2>Workload {esc(workload)}</h2>"]

    def workload_close(self, report: Report, workload: str) -> list[str]:
        return ["</section>"]

    # -- sections, in the outline's order ---------------------------------------------
    def answer(self, report: Report, options: ReportOptions) -> list[str]:
        block = answer.render(report, footer=False)
        if not block:
            return []
        # The picture first (a forest plot per workload), then the same answer in words.
        pictures = [c for w in report.workloads() for c in charts.forest_charts(report, w)]
        figures = ['<div class="charts forest">', *(
            f'<figure id="{self.ids("chart-" + c.slug)}" data-kind="{c.kind}">{c.svg}</figure>'
            for c in pictures), "</div>"] if pictures else []
        return self._section("answer", "Answer",
                             [*figures, f'<pre class="answer">{esc(chr(10).join(block))}</pre>'])

    def verdicts(self, report: Report, options: ReportOptions) -> list[str]:
        table = verdict_table(report, options.metrics)
        out: list[str] = []
        if table.rows:
            out.append(
                "<p>Ratio = candidate / baseline (geometric means), 95 % interval; "
                "verdicts: Welch's test for a difference and two one-sided tests for "
                f"equivalence within the threshold ({esc(threshold_note(report))}).</p>"
            )
            headlines = headline_table(report, options.metrics)
            if headlines is not None:
                out += [f"<h3>{esc(headlines.title)}</h3>",
                        render_table(headlines, self.ids("headline-table")),
                        "<h3>All metrics</h3>"]
            out.append(render_table(table, self.ids("verdict-table"), filter_box=True))
        else:
            out.append(
                "<p>No comparisons: a comparison needs the baseline and another target "
                "with finished runs of the same case.</p>"
            )
        if report.time_lines:  # bursts and warm-ups: what the verdicts compare (timeline.py)
            out.append('<ul class="time">' + "".join(
                f"<li>time: {esc(t.text)}</li>" for t in report.time_lines) + "</ul>")
        return self._section("verdicts", table.title, out)

    def warnings(self, report: Report, options: ReportOptions) -> list[str]:
        title = f"Warnings ({len(report.warnings)})"
        if not report.warnings:
            return self._section("warnings", title, [
                "<p>None: no failed runs, outliers, drift, stalls or cache effects "
                "found.</p>"])
        items = [f'<li><span class="kind">{esc(w.kind)}</span> {esc(w.message)}</li>'
                 for w in report.warnings]
        return self._section("warnings", title, ['<ul class="warnings">', *items, "</ul>"])

    def durability(self, report: Report, options: ReportOptions) -> list[str]:
        table = durabilityview.table(report.durability, {
            w: report.varying_params(w) for w in report.workloads()})
        if not table.rows:
            return []
        return self._section("durability", table.title, [
            "<p>Each cut: the power off at a moment under writes, every disk keeping what "
            "it had made durable, the stack brought back as after a reboot, and the "
            "writes and commits it had acknowledged before the cut read back "
            "(docs/durability.md). The time-series charts below mark each cut.</p>",
            render_table(table, self.ids("durability-table"))])

    def percent(self, report: Report, options: ReportOptions) -> list[str]:
        percent = percent_table(report, options.metrics)
        if not percent.rows:
            return []
        return self._section("percent", percent.title,
                             [render_table(percent, self.ids("percent-table"))])

    def phases(self, report: Report, options: ReportOptions) -> list[str]:
        table = phaseview.phase_table(report)
        if not table.rows:
            return []
        return self._section("phases", table.title,
                             [render_table(table, self.ids("phases-table"))])

    def charts(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        assert workload is not None
        figures = [
            *charts.curve_charts(report, workload),
            *charts.bar_charts(report, workload),
            *charts.percentile_charts(report, workload, options.max_series_charts),
            *charts.series_charts(report, workload, options),
        ]
        if not figures:
            return []
        return ['<div class="charts">', *(
            f'<figure id="{self.ids("chart-" + c.slug)}" data-kind="{c.kind}">{c.svg}</figure>'
            for c in figures), "</div>"]

    def summary(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        summary = summary_table(report, options.metrics, workload)
        if not summary.rows:
            return []
        return ["<h3>Summary</h3>", render_table(
            summary, self.ids(f"summary-{workload}"), filter_box=len(summary.rows) > 20)]

    def curves(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]:
        assert workload is not None
        out: list[str] = []
        for curve in curveview.curve_tables(report, workload):
            out += [f"<h3>{esc(curve.title)}</h3>", render_table(curve, self.ids("curve-table"))]
        return out

    def percentiles(self, report: Report, options: ReportOptions, workload: str | None
                    ) -> list[str]:
        pct = percentile_table(report, workload)
        if not pct.rows:
            return []
        return [f"<h3>{esc(pct.title)}</h3>", render_table(pct, self.ids(f"pct-{workload}"))]

    def per_run(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]:
        per_run = per_run_tables(report, options.metrics, workload)
        if not per_run:
            return []
        out = ["<details><summary>Per-run values (in run order; * marks an outlier, "
               "kept in every statistic)</summary>"]
        for table in per_run:
            out += [f"<h3>{esc(table.title)}</h3>", render_table(table, self.ids("per-run"))]
        return [*out, "</details>"]

    def runs(self, report: Report, options: ReportOptions) -> list[str]:
        table = runs_table(report, options.max_listed_runs)
        out = [
            "<p>disk I/O: bytes the target's devices read (r) and wrote (w) as a share of "
            "what the workload reported; far below 100 % means a cache answered.</p>",
        ]
        hidden = len(report.runs) - len(table.rows)
        if hidden > 0:
            out.append(
                f"<p>{hidden} more finished runs are not listed here; the CSV and JSON "
                "exports carry every run.</p>"
            )
        out.append(render_table(table, self.ids("runs-table"), filter_box=True))
        return self._section("runs", "Runs", out)

    def environment(self, report: Report, options: ReportOptions) -> list[str]:
        out: list[str] = []
        rows = environment_rows(report.environment)
        if rows:
            table = Table("Environment", ("field", "value"), tuple(rows))
            out.append(render_table(table, self.ids("environment-table")))
        states = dict(targetstate.rows(report.targets, report.runs))
        for t in report.targets:
            status = f"{t.type}, {t.status}" + (f": {t.error}" if t.error else "")
            anchor = self.ids("target-" + t.name)
            out.append(f'<h3 id="{anchor}">Target {esc(t.name)} ({esc(status)})</h3>')
            state = states.get(t.name)
            if state:
                out.append(f"<p>State: {esc(state)}</p>")
            steps = t.info.get("recipe", [])
            if steps:
                out.append("<pre>" + esc("\n".join(str(s) for s in steps)) + "</pre>")
        return self._section("environment", "Environment", out)
