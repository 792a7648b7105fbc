"""CSV: one row per metric per run (long format), numbers in base units; with --series,
one row per second of each run's series instead (report/seriesout.py)."""

from __future__ import annotations

import csv
import io

from volbench.core.model import canonical_json, params_key
from volbench.report import seriesout
from volbench.report.data import Report, measured
from volbench.report.options import ReportOptions

COLUMNS = ("experiment", "target", "workload", "params", "repetition", "metric", "value",
           "unit", "tags", "note")


class CsvExporter:
    name = "csv"
    extension = "csv"

    def render(self, report: Report, options: ReportOptions) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        if options.series:
            writer.writerow(seriesout.CSV_COLUMNS)
            writer.writerows(seriesout.series_rows(report))
            return buf.getvalue()
        writer.writerow(COLUMNS)
        exp_name = report.experiments[-1].name if report.experiments else ""
        wanted = set(options.metrics) if options.metrics and "all" not in options.metrics \
            else None
        if report.export is not None:  # every metric, streamed (the runs may hold fewer)
            for target, workload, params, rep, name, value, unit, tags, note in \
                    report.export.metric_rows():
                if wanted is None or name in wanted:
                    writer.writerow((exp_name, target, workload, params, rep, name,
                                     "" if value is None else repr(value), unit, tags, note))
            return buf.getvalue()
        for run in measured(report.runs):
            for m in run.metrics:
                if wanted is not None and m.name not in wanted:
                    continue
                writer.writerow((exp_name, run.target, run.workload,
                                 params_key(run.params), run.repetition, m.name,
                                 "" if m.value is None else repr(m.value), m.unit,
                                 canonical_json(dict(m.tags)), m.note))
        return buf.getvalue()
