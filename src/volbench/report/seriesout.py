"""Each run's per-second series for the exports (`volbench report --series`).

One place reads them, for JSON and CSV alike: the series each run stored (fio's
per-second logs, pgbench -P progress, dd progress, …; seconds since the run's start,
values in base units), in run order. The HTML time-series charts draw the same
`RunResult.parsed.series` of the same report runs (report/charts.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from volbench.core.model import canonical_json, params_key
from volbench.report.data import Report

CSV_COLUMNS = ("experiment", "run", "target", "workload", "params", "repetition", "series",
               "unit", "tags", "second", "value")


def series_json(report: Report) -> list[dict[str, Any]]:
    """Every series of every run: {"run" (1-based position in the report's runs, as in
    warnings), target, workload, params, repetition, name, unit, tags, points [[s, v]]}."""
    out = []
    for index, run in enumerate(report.runs):
        for s in run.parsed.series:
            out.append({"run": index + 1, "target": run.target, "workload": run.workload,
                        "params": dict(run.params), "repetition": run.repetition,
                        "name": s.name, "unit": s.unit, "tags": dict(s.tags),
                        "points": [[t, v] for t, v in s.points]})
    return out


def series_rows(report: Report) -> Iterator[tuple[object, ...]]:
    """The same series as CSV rows, one per point (CSV_COLUMNS)."""
    experiment = report.experiments[-1].name if report.experiments else ""
    for index, run in enumerate(report.runs):
        params = params_key(run.params)
        for s in run.parsed.series:
            tags = canonical_json(dict(s.tags))
            for t, v in s.points:
                yield (experiment, index + 1, run.target, run.workload, params,
                       run.repetition, s.name, s.unit, tags, repr(t), repr(v))
