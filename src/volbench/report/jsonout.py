"""JSON: the documented report shape other tools rely on.

{"experiment": …, "environment": …, "runs": [{"target", "workload", "params",
"repetition", "status", "metrics": [{"name", "value", "unit", "tags"}]}],
"summaries": […]} plus "baseline", "thresholds", "verdicts", "warnings" and
"percentiles"; with --series, "series": each run's per-second series (seriesout.py).
Values are in base units (B, s, op/s, B/s, tx/s); ratios are candidate / baseline.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields, is_dataclass
from typing import Any

from volbench.core.headline import headline
from volbench.report import seriesout
from volbench.report.curveview import curves_json
from volbench.report.data import CaseSummary, Report
from volbench.report.options import ReportOptions
from volbench.report.verdicts import VerdictRow, phrase

_FIELDS: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """A dataclass (nested ones too) as plain dicts and lists: dataclasses.asdict deep-
    copies every leaf, which costs about a second on a report of 100 000 runs."""
    kind = type(value)
    names = _FIELDS.get(kind)
    if names is None and is_dataclass(value):
        names = _FIELDS[kind] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


def summary_json(s: CaseSummary) -> dict[str, Any]:
    sm = plain(s.summary)
    drift = plain(s.drift) if s.drift is not None else None
    return {"target": s.target, "workload": s.workload, "params": dict(s.params),
            "metric": s.metric, "unit": s.unit, "tags": dict(s.tags), **sm,
            "values": list(s.values), "repetitions": list(s.repetitions),
            "outliers": [{"index": i, "repetition": s.repetitions[i], "z": z}
                         for i, z in s.outliers],
            "drift": drift}


def verdict_json(v: VerdictRow) -> dict[str, Any]:
    s = v.candidate
    out: dict[str, Any] = {
        "target": s.target, "baseline": v.baseline.target, "workload": s.workload,
        "params": dict(s.params), "metric": s.metric, "unit": s.unit, "tags": dict(s.tags),
        "threshold": v.threshold, "n": s.summary.n, "n_baseline": v.baseline.summary.n,
        "verdict": v.verdict, "text": v.phrase,
        "headline": headline(s.metric, s.tags, s.params), "role": v.role,
        "family": None if v.family is None else {"method": v.family.method,
                                                  "size": v.family.size,
                                                  "alpha": v.family.alpha}}
    if v.means is not None:
        ci = v.means.interval
        out["arithmetic_means"] = {"ratio": v.means.ratio, "interval": None if ci is None
                                   else {"low": ci.low, "high": ci.high, "level": ci.level}}
    c = v.comparison
    if c is None:
        out["error"] = v.error
        return out
    comparison = plain(c)
    comparison["text"] = phrase(c)
    out["comparison"] = comparison
    return out


def _run_json(report: Report, index: int) -> dict[str, Any]:
    r = report.runs[index]
    out: dict[str, Any] = {
        "target": r.target, "workload": r.workload, "params": dict(r.params),
        "repetition": r.repetition, "warmup": r.warmup, "status": str(r.status),
        "started": r.started, "ended": r.ended, "argv": list(r.argv),
        "exit_code": r.exit_code, "error": r.error, "annotations": dict(r.annotations),
        "metrics": [m.to_json() for m in r.metrics]}
    out.update(_run_checks(report, index))
    return out


def _run_checks(report: Report, index: int) -> dict[str, Any]:
    """What the report found wrong with one run, added to its JSON: an I/O check whose
    devices did far less than the workload ("measured the page cache"), and stalls.
    A run with nothing found gets nothing: its device I/O is in its annotations already
    (and on 100 000 runs, splicing every run's text costs seconds)."""
    out: dict[str, Any] = {}
    check = report.io_checks.get(index)
    if check is not None and check.short:
        out["io_check"] = {"tool_bytes": dict(check.tool), "device_bytes": dict(check.device),
                           "short": list(check.short)}
    stalls = report.stalls.get(index)
    if stalls:
        out["stalls"] = [{"series": s.series.name, "tags": dict(s.series.tags),
                          "stalls": [plain(st) for st in s.stalls]} for s in stalls]
    return out


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinity (nested) as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def strict_json(text: str) -> str:
    """A run's JSON with NaN/Infinity as null, so strict parsers can read the report.

    Python wrote them into older databases (imports refuse them now); the report leaves
    such values out of every figure and warns, and the export must stay valid JSON. Only
    a text that may hold one is parsed again."""
    if "Infinity" not in text and "NaN" not in text:
        return text
    return json.dumps(_finite(json.loads(text)), separators=(",", ":"), default=str)


def runs_pieces(report: Report) -> list[str]:
    """The "runs" array as text pieces (joined once by the caller: on 100 000 runs each
    copy of the ~350 MB text costs a noticeable fraction of a second). From the report's
    export stream when there is one (complete, and fast on large databases), else from
    the runs in memory."""
    if report.export is None:
        return [strict_json(json.dumps([_run_json(report, i) for i in range(len(report.runs))],
                                       separators=(",", ":"), default=str))]
    flagged = set(report.io_checks) | set(report.stalls)
    parts = ["["]
    for index, stored in enumerate(report.export.runs_json()):
        text = strict_json(stored)
        if index:
            parts.append(",")
        extra = _run_checks(report, index) if index in flagged else None
        if extra:  # splice the report's findings into the run's object
            parts += [text[:-1], ",", json.dumps(extra, separators=(",", ":"))[1:]]
        else:
            parts.append(text)
    parts.append("]")
    return parts


def report_json(report: Report) -> dict[str, Any]:
    """Everything but the runs (see runs_pieces)."""
    experiments = [{"id": e.id, "name": e.name, "status": e.status, "created": e.created,
                    "finished": e.finished, "seed": e.seed, "document": e.document}
                   for e in report.experiments]
    span = report.runs_per_case()
    return {
        "experiment": experiments[-1] if experiments else None,
        "experiments": experiments,
        "environment": report.environment,
        "targets": [{"name": t.name, "type": t.type, "status": t.status, "error": t.error,
                     "info": t.info} for t in report.targets],
        "baseline": report.baseline,
        "thresholds": report.thresholds,
        "sequential_design": None if report.design is None else {
            "spending": report.design.spending.value, "first": report.design.first,
            "last": report.design.last},
        "runs_per_case": {"min": span[0], "max": span[1]} if span else None,
        "summaries": [summary_json(s) for s in report.summaries],
        "verdicts": [verdict_json(v) for v in report.verdicts],
        "percentiles": [{"target": m.target, "workload": m.workload, "params": dict(m.params),
                         "name": m.name, "unit": m.unit, "tags": dict(m.tags), "runs": m.runs,
                         "samples": m.samples,
                         "values": {f"{p:g}": v for p, v in m.values}}
                        for m in report.percentiles],
        "curves": curves_json(report),
        "warnings": [w.to_json() for w in report.warnings],
        # Bursts / warm-up and steady state per case, in words (docs/time.md).
        "time": [{"target": t.target, "workload": t.workload, "params": dict(t.params),
                  "text": t.text} for t in report.time_lines],
        "notes": report.notes,
    }


class JsonExporter:
    name = "json"
    extension = "json"

    def render(self, report: Report, options: ReportOptions) -> str:
        # Compact on purpose: json.dumps with indent runs the pure-Python encoder, ~10×
        # slower on a large database (pretty-print with `jq .` or `python -m json.tool`).
        doc = report_json(report)
        if options.series:  # per-second series of every run (report/seriesout.py)
            doc["series"] = seriesout.series_json(report)
        head = json.dumps(doc, separators=(",", ":"), default=str)
        return "".join([head[:-1], ',"runs":', *runs_pieces(report), "}\n"])
