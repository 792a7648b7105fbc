"""Everything a report shows, computed once from the result model.

Exporters (terminal, Markdown, CSV, JSON, HTML) render a `Report`; none of them
computes statistics of its own. Depends only on the result model and stats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from volbench.model import Metric, Params, RunResult, Status, canonical_json
from volbench.stats import Summary, summarize
from volbench.store import ExperimentRow, TargetRow

# Metrics shown by default in tables, in this order (all are kept in CSV/JSON).
HEADLINE = ("iops", "bw", "lat_mean", "clat_p99", "tps", "latency_avg", "latency_p99",
            "init_time", "real", "other", "mb_per_s", "bytes_per_s", "cached_read_bps",
            "disk_read_bps")


@dataclass(frozen=True)
class CaseSummary:
    """One metric of one case (target × workload × params × tags) over its repetitions."""

    target: str
    workload: str
    params: Params
    metric: str
    unit: str
    tags: Mapping[str, str]
    summary: Summary
    # Values in repetition order (drift and per-run tables need the order).
    values: tuple[float, ...]
    repetitions: tuple[int, ...]

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.target, self.workload, canonical_json(dict(self.params)), self.metric,
                canonical_json(dict(self.tags)))


@dataclass
class Report:
    experiments: list[ExperimentRow]
    targets: list[TargetRow]
    runs: list[RunResult]
    summaries: list[CaseSummary]
    baseline: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def environment(self) -> dict[str, Any]:
        return self.experiments[-1].environment if self.experiments else {}

    def target_order(self) -> list[str]:
        names = [t.name for t in self.targets]
        for run in self.runs:
            if run.target not in names:
                names.append(run.target)
        return names

    def varying_params(self, workload: str) -> list[str]:
        """Parameters that differ between this workload's cases (the ones worth showing)."""
        values: dict[str, set[str]] = {}
        for run in self.runs:
            if run.workload == workload:
                for k, v in run.params.items():
                    values.setdefault(k, set()).add(json.dumps(v))
        return [k for k, vs in values.items() if len(vs) > 1]


def measured(runs: Iterable[RunResult]) -> list[RunResult]:
    """Runs that count: finished OK and not warm-up."""
    return [r for r in runs if r.status is Status.OK and not r.warmup]


def summarize_runs(runs: Sequence[RunResult]) -> list[CaseSummary]:
    groups: dict[tuple[str, str, str, str, str], list[tuple[int, Metric, RunResult]]] = {}
    for run in measured(runs):
        params_key = canonical_json(dict(run.params))
        for m in run.metrics:
            if m.value is None:
                continue
            key = (run.target, run.workload, params_key, m.name, canonical_json(dict(m.tags)))
            groups.setdefault(key, []).append((run.repetition, m, run))
    out: list[CaseSummary] = []
    for items in groups.values():
        items.sort(key=lambda item: (item[2].started, item[0]))
        values = tuple(float(m.value) for _, m, _ in items if m.value is not None)
        _, first, run = items[0]
        out.append(CaseSummary(run.target, run.workload, run.params, first.name, first.unit,
                               first.tags, summarize(values), values,
                               tuple(rep for rep, _, _ in items)))
    return out


def build(experiments: list[ExperimentRow], targets: list[TargetRow], runs: list[RunResult]
          ) -> Report:
    baseline = None
    for row in reversed(experiments):
        if row.document.get("baseline"):
            baseline = str(row.document["baseline"])
            break
    report = Report(experiments, targets, runs, summarize_runs(runs), baseline)
    failed = [r for r in runs if r.status is not Status.OK]
    if failed:
        report.notes.append(f"{len(failed)} run(s) did not finish OK; their raw output is in "
                            "the database (see the per-run list)")
    for t in targets:
        if t.status == "failed":
            report.notes.append(f"target {t.name} could not be built: {t.error}")
    return report
