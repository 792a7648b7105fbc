"""HTML: one self-contained page (inline CSS, SVG and a few lines of JS) that works offline.

Order: verdicts up front, then warnings and the "% of baseline" table, then per
workload its charts, summary, merged latency percentiles and per-run values, then
the list of runs, the environment and each target's recipe.
"""

from __future__ import annotations

import html
from importlib import resources

from volbench import __version__
from volbench.report import charts, curveview, targetstate
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
    name = "html"
    extension = "html"

    def render(self, report: Report, options: ReportOptions) -> str:
        ids = _Ids()
        names = ", ".join(dict.fromkeys(e.name for e in report.experiments)) or "volbench"
        body = [
            f"<header><h1>{esc(names)}</h1>",
            f'<p class="facts">{esc(self._facts(report))}</p></header>',
            self._nav(report),
        ]
        body += self._verdicts(report, options, ids)
        body += self._warnings(report)
        percent = percent_table(report, options.metrics)
        if percent.rows:
            body += [
                f'<section id="percent"><h2>{esc(percent.title)}</h2>',
                render_table(percent, ids("percent-table")),
                "</section>",
            ]
        for workload in report.workloads():
            body += self._workload(report, workload, options, ids)
        body += self._runs(report, options, ids)
        body += self._environment(report, ids)
        body.append(
            f"<footer>volbench {esc(__version__)} · self-contained report: no network "
            "needed · values in tables are rounded; JSON/CSV exports keep base units"
            "</footer>"
        )
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

    @staticmethod
    def _nav(report: Report) -> str:
        links = [("verdicts", "Verdicts"), ("warnings", "Warnings")]
        links += [(f"workload-{_anchor(w)}", f"Workload {w}") for w in report.workloads()]
        links += [("runs", "Runs"), ("environment", "Environment")]
        return "<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in links) + "</nav>"

    @staticmethod
    def _verdicts(report: Report, options: ReportOptions, ids: _Ids) -> list[str]:
        table = verdict_table(report, options.metrics)
        out = [f'<section id="verdicts"><h2>{esc(table.title)}</h2>']
        if table.rows:
            out.append(
                "<p>Ratio = candidate / baseline (geometric means), 95 % interval; "
                "verdicts: Welch's test for a difference and two one-sided tests for "
                f"equivalence within the threshold ({esc(threshold_note(report))}).</p>"
            )
            headlines = headline_table(report, options.metrics)
            if headlines is not None:
                out += [f"<h3>{esc(headlines.title)}</h3>",
                        render_table(headlines, ids("headline-table")), "<h3>All metrics</h3>"]
            out.append(render_table(table, ids("verdict-table"), filter_box=True))
        else:
            out.append(
                "<p>No comparisons: a comparison needs the baseline and another target "
                "with finished runs of the same case.</p>"
            )
        if report.time_lines:  # bursts and warm-ups: what the verdicts compare (timeline.py)
            out.append('<ul class="time">' + "".join(
                f"<li>time: {esc(t.text)}</li>" for t in report.time_lines) + "</ul>")
        return [*out, "</section>"]

    @staticmethod
    def _warnings(report: Report) -> list[str]:
        out = [f'<section id="warnings"><h2>Warnings ({len(report.warnings)})</h2>']
        if not report.warnings:
            return [
                *out,
                "<p>None: no failed runs, outliers, drift, stalls or cache effects "
                "found.</p></section>",
            ]
        out.append('<ul class="warnings">')
        out += [
            f'<li><span class="kind">{esc(w.kind)}</span> {esc(w.message)}</li>'
            for w in report.warnings
        ]
        return [*out, "</ul></section>"]

    @staticmethod
    def _workload(report: Report, workload: str, options: ReportOptions, ids: _Ids) -> list[str]:
        out = [f'<section id="{ids("workload-" + workload)}"><h2>Workload {esc(workload)}</h2>']
        figures = [
            *charts.curve_charts(report, workload),
            *charts.bar_charts(report, workload),
            *charts.percentile_charts(report, workload, options.max_series_charts),
            *charts.series_charts(report, workload, options),
        ]
        if figures:
            out.append('<div class="charts">')
            out += [
                f'<figure id="{ids("chart-" + c.slug)}" data-kind="{c.kind}">{c.svg}</figure>'
                for c in figures
            ]
            out.append("</div>")
        summary = summary_table(report, options.metrics, workload)
        if summary.rows:
            out += [
                "<h3>Summary</h3>",
                render_table(
                    summary, ids(f"summary-{workload}"), filter_box=len(summary.rows) > 20
                ),
            ]
        for curve in curveview.curve_tables(report, workload):
            out += [f"<h3>{esc(curve.title)}</h3>", render_table(curve, ids("curve-table"))]
        pct = percentile_table(report, workload)
        if pct.rows:
            out += [f"<h3>{esc(pct.title)}</h3>", render_table(pct, ids(f"pct-{workload}"))]
        per_run = per_run_tables(report, options.metrics, workload)
        if per_run:
            out.append(
                "<details><summary>Per-run values (in run order; * marks an outlier, "
                "kept in every statistic)</summary>"
            )
            for table in per_run:
                out += [f"<h3>{esc(table.title)}</h3>", render_table(table, ids("per-run"))]
            out.append("</details>")
        return [*out, "</section>"]

    @staticmethod
    def _runs(report: Report, options: ReportOptions, ids: _Ids) -> list[str]:
        table = runs_table(report, options.max_listed_runs)
        out = [
            '<section id="runs"><h2>Runs</h2>',
            "<p>disk I/O: bytes the target's devices read (r) and wrote (w) as a share of "
            "what the workload reported; far below 100 % means a cache answered.</p>",
        ]
        hidden = len(report.runs) - len(table.rows)
        if hidden > 0:
            out.append(
                f"<p>{hidden} more finished runs are not listed here; the CSV and JSON "
                "exports carry every run.</p>"
            )
        out.append(render_table(table, ids("runs-table"), filter_box=True))
        return [*out, "</section>"]

    @staticmethod
    def _environment(report: Report, ids: _Ids) -> list[str]:
        out = ['<section id="environment"><h2>Environment</h2>']
        rows = environment_rows(report.environment)
        if rows:
            out.append(
                render_table(
                    Table("Environment", ("field", "value"), tuple(rows)), ids("environment-table")
                )
            )
        states = dict(targetstate.rows(report.targets, report.runs))
        for t in report.targets:
            status = f"{t.type}, {t.status}" + (f": {t.error}" if t.error else "")
            out.append(
                f'<h3 id="{ids("target-" + t.name)}">Target {esc(t.name)} ({esc(status)})</h3>'
            )
            state = states.get(t.name)
            if state:
                out.append(f"<p>State: {esc(state)}</p>")
            steps = t.info.get("recipe", [])
            if steps:
                out.append("<pre>" + esc("\n".join(str(s) for s in steps)) + "</pre>")
        return [*out, "</section>"]
