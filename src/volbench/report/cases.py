"""Runs grouped into cases (target × workload × params × metric × tags) and summarised.

A case's values are kept in run order (start time), because drift is a property of
that order. Outliers are flagged with their modified z-score and never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from volbench.core import metricinfo as metrics
from volbench.core.model import Params, RunResult, Status, canonical_json, params_key
from volbench.report.noise import had_company
from volbench.stats import (
    Drift,
    Summary,
    drift,
    modified_z_scores,
    outliers_calibrated,
    summarize,
)

# Below this many runs a case's spread is a guess (and compare() cannot decide).
MIN_RUNS = 3
# A run within 1 % of its case's median is never called an outlier: on a throttled disk
# the runs agree to 0.05 % and the MAD rule alone flags 0.04 % (seed 001 in the lab).
OUTLIER_MIN_SHARE = 0.01

CaseKey = tuple[str, str, str, str, str]


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
    # Values in run order (drift and per-run tables need the order).
    values: tuple[float, ...]
    repetitions: tuple[int, ...]
    # Positions of the runs in Report.runs, parallel to `values`.
    run_indices: tuple[int, ...] = ()
    # Indices into `values` flagged by the MAD rule (cut-off by n), with their scores.
    outliers: tuple[tuple[int, float], ...] = ()
    drift: Drift | None = None
    # (runs during which other work shared the machine, runs with an activity record):
    # a verdict promises no number of runs where any had company (stats.Comparison).
    # None: no run has a record (older databases, figures derived from other cases).
    company: tuple[int, int] | None = None

    @property
    def key(self) -> CaseKey:
        return (
            self.target,
            self.workload,
            params_key(self.params),
            self.metric,
            canonical_json(dict(self.tags)),
        )

    @property
    def comparison_key(self) -> tuple[str, str, str, str]:
        """What must match for two targets' cases to be compared."""
        return self.key[1:]

    @property
    def op(self) -> str:
        return self.tags.get("op", "")

    def other_tags(self) -> str:
        """Tags except op, as "job=all host=a" (they tell same-named metrics apart)."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.tags.items()) if k != "op")


def measured(runs: Iterable[RunResult]) -> list[RunResult]:
    """Runs that count: finished OK and not warm-up."""
    return [r for r in runs if r.status is Status.OK and not r.warmup]


def summarize_runs(
    runs: Sequence[RunResult], wanted: Sequence[str] | None = None
) -> list[CaseSummary]:
    """Summaries of the selected metrics (None: primary metrics; ("all",): every metric)."""
    groups: dict[CaseKey, list[tuple[float, int, int, float, str, Mapping[str, str]]]] = {}
    # Both caches matter at 100 000 runs × 37 metrics: metrics.selected runs a few
    # regexes, canonical_json a json.dumps. Tag dicts are shared between metrics by the
    # store and stay alive for the whole loop, so their id() is a safe key here.
    chosen: dict[str, bool] = {}
    tag_keys: dict[int, str] = {}
    for index, run in enumerate(runs):
        if run.status is not Status.OK or run.warmup:
            continue
        case_params = params_key(run.params)
        for m in run.metrics:
            pick = chosen.get(m.name)
            if pick is None:
                pick = chosen[m.name] = metrics.selected(m.name, m.unit, wanted)
            if not pick or m.value is None:
                continue
            tags = tag_keys.get(id(m.tags))
            if tags is None:
                tags = tag_keys[id(m.tags)] = canonical_json(dict(m.tags))
            groups.setdefault((run.target, run.workload, case_params, m.name, tags), []).append(
                (run.started, run.repetition, index, float(m.value), m.unit, m.tags)
            )
    out: list[CaseSummary] = []
    crowded: dict[int, bool | None] = {}  # per run, not per run × metric
    for key, items in groups.items():
        items.sort(key=lambda item: (item[0], item[1], item[2]))
        values = tuple(item[3] for item in items)
        first_run = runs[items[0][2]]
        indices = tuple(item[2] for item in items)
        for i in indices:
            if i not in crowded:
                crowded[i] = had_company(runs[i])
        out.append(
            _case(
                first_run,
                key[3],
                items[0][4],
                items[0][5],
                values,
                tuple(item[1] for item in items),
                indices,
                _company([crowded[i] for i in indices]),
            )
        )
    return out


def _company(flags: Sequence[bool | None]) -> tuple[int, int] | None:
    known = [f for f in flags if f is not None]
    return (sum(known), len(known)) if known else None


def _case(
    run: RunResult,
    metric: str,
    unit: str,
    tags: Mapping[str, str],
    values: tuple[float, ...],
    reps: tuple[int, ...],
    indices: tuple[int, ...],
    company: tuple[int, int] | None = None,
) -> CaseSummary:
    outliers: tuple[tuple[int, float], ...] = ()
    trend = None
    if len(values) >= MIN_RUNS:
        # Cut-off by n (stats.outlier_cutoff): a fixed 3.5 flagged 28 % of clean 3-run cases.
        flagged = outliers_calibrated(values, min_relative=OUTLIER_MIN_SHARE)
        if flagged:
            scores = modified_z_scores(values)
            outliers = tuple((i, scores[i]) for i in flagged)
        trend = drift(values)
    return CaseSummary(
        run.target,
        run.workload,
        run.params,
        metric,
        unit,
        tags,
        summarize(values),
        values,
        reps,
        indices,
        outliers,
        trend,
        company,
    )
