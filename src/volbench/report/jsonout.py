"""JSON: the documented report shape other tools rely on.

{"experiment": …, "environment": …, "runs": [{"target", "workload", "params",
"repetition", "status", "metrics": [{"name", "value", "unit", "tags"}]}],
"summaries": […]}
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from volbench.report.data import CaseSummary, Report
from volbench.report.options import ReportOptions


def summary_json(s: CaseSummary) -> dict[str, Any]:
    sm = asdict(s.summary)
    return {"target": s.target, "workload": s.workload, "params": dict(s.params),
            "metric": s.metric, "unit": s.unit, "tags": dict(s.tags), **sm,
            "values": list(s.values)}


def report_json(report: Report) -> dict[str, Any]:
    experiments = [{"id": e.id, "name": e.name, "status": e.status, "created": e.created,
                    "finished": e.finished, "seed": e.seed, "document": e.document}
                   for e in report.experiments]
    return {
        "experiment": experiments[-1] if experiments else None,
        "experiments": experiments,
        "environment": report.environment,
        "targets": [{"name": t.name, "type": t.type, "status": t.status, "error": t.error,
                     "info": t.info} for t in report.targets],
        "runs": [{"target": r.target, "workload": r.workload, "params": dict(r.params),
                  "repetition": r.repetition, "warmup": r.warmup, "status": str(r.status),
                  "started": r.started, "ended": r.ended, "argv": list(r.argv),
                  "exit_code": r.exit_code, "error": r.error,
                  "annotations": dict(r.annotations),
                  "metrics": [m.to_json() for m in r.metrics]} for r in report.runs],
        "summaries": [summary_json(s) for s in report.summaries],
        "notes": report.notes,
    }


class JsonExporter:
    name = "json"
    extension = "json"

    def render(self, report: Report, options: ReportOptions) -> str:
        return json.dumps(report_json(report), indent=1, default=str) + "\n"
