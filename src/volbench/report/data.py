"""Everything a report shows, computed once from the result model.

Exporters (terminal, Markdown, CSV, JSON, HTML, charts) render a `Report`; none of
them computes statistics of its own. Depends only on the result model and stats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from volbench.config.fields import did_you_mean
from volbench.config.steady import SS_METRICS
from volbench.core import syncmode
from volbench.core.bulk import paused_gc
from volbench.core.errors import VolbenchError
from volbench.core.metricinfo import HEADLINE, selected
from volbench.core.model import (
    CaseHistogram,
    ExperimentRow,
    RunResult,
    Status,
    TargetRow,
    params_key,
)
from volbench.report import (
    badvalues,
    checks,
    commitsettings,
    curves,
    durability,
    labburst,
    readable,
    steadiness,
    timeline,
    timestory,
    verdicts,
)
from volbench.report import fingerprints as environments
from volbench.report.cases import CaseSummary, measured, summarize_runs
from volbench.report.checks import IoCheck, ReportWarning, SeriesStalls
from volbench.report.options import ReportOptions
from volbench.report.percentiles import MergedPercentiles, case_histograms, merged_percentiles
from volbench.report.timeline import TimeLine
from volbench.report.verdicts import VerdictRow
from volbench.stats import SequentialDesign

__all__ = ["HEADLINE", "CaseSummary", "Report", "RunExport", "build", "measured",
           "needed_metrics", "summarize_runs"]

MetricRow = tuple[str, str, str, int, str, float | None, str, str, str]


@dataclass(frozen=True)
class RunExport:
    """Every metric of every run, streamed by whoever keeps the runs (the store), for the
    CSV and JSON exporters. A report computes with runs that may carry only the metrics
    it shows (`needed_metrics`); on 100 000 runs the full set is millions of values, far
    too many to hold as objects (bench/report_scale.py).

    `runs_json` yields each run as a JSON object in the report's run shape, in the order
    of `Report.runs`; `metric_rows` yields (target, workload, params JSON, repetition,
    name, value, unit, tags JSON, note) of finished measured runs, in run order.
    """

    runs_json: Callable[[], Iterable[str]]
    metric_rows: Callable[[], Iterable[MetricRow]]


def needed_metrics(kinds: Iterable[tuple[str, str]], options: ReportOptions) -> set[str]:
    """Metric names a report needs of each run: those it shows, io_bytes for the
    "did the disk do the work?" check, the burst / warm-up lengths (timeline) and fio's
    steady-state figures (steadiness: without them a `volbench report` of a
    `steady: {within: run}` experiment said nothing of it, issue 32)."""
    return ({name for name, unit in kinds if selected(name, unit, options.metrics)}
            | {"io_bytes", *timeline.SECONDS, *FAULT_METRICS, *SS_METRICS,
               *durability.METRICS})


# The faults' whole-run metrics the phase table (phaseview.py) shows: read with every report.
FAULT_METRICS = ("stall_seconds", "recovery_seconds", "rebuild_seconds", "rebuild_progress",
                 "rebuild_expected_seconds", "rebuild_share", "workload_share", "io_errors")


@dataclass
class Report:
    experiments: list[ExperimentRow]
    targets: list[TargetRow]
    runs: list[RunResult]
    summaries: list[CaseSummary]
    baseline: str | None = None
    verdicts: list[VerdictRow] = field(default_factory=list)
    warnings: list[ReportWarning] = field(default_factory=list)
    percentiles: list[MergedPercentiles] = field(default_factory=list)
    # Per run (position in `runs`): stalls found in its time series, device-vs-tool I/O.
    stalls: dict[int, list[SeriesStalls]] = field(default_factory=dict)
    io_checks: dict[int, IoCheck] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    # Adaptive repetition's group-sequential design (None: fixed runs).
    design: SequentialDesign | None = None
    # Cases that burst or warm up, in words; their verdicts compare sustained levels.
    time_lines: list[TimeLine] = field(default_factory=list)
    # Load curves (report/curves.py); their figures are in `summaries` too.
    curves: list[curves.Curve] = field(default_factory=list)
    # Power cuts per case (report/durability.py): what was acknowledged and then lost.
    durability: list[durability.DurabilityRow] = field(default_factory=list)
    options: ReportOptions = field(default_factory=ReportOptions)
    export: RunExport | None = None
    _varying: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _targets: list[str] = field(default_factory=list, repr=False)
    _workloads: list[str] = field(default_factory=list, repr=False)

    @property
    def environment(self) -> dict[str, Any]:
        return self.experiments[-1].environment if self.experiments else {}

    @property
    def notes(self) -> list[str]:
        """The warnings as plain lines (kept for callers of the first report API)."""
        return [w.message for w in self.warnings]

    def target_order(self) -> list[str]:
        """Targets as the experiment lists them, then any only the runs name."""
        if not self._targets:
            names = list(dict.fromkeys(t.name for t in self.targets))
            names += list(dict.fromkeys(r.target for r in self.runs if r.target not in names))
            self._targets = names
        return list(self._targets)

    def varying_params(self, workload: str) -> list[str]:
        """Parameters that differ between this workload's cases (the ones worth showing)."""
        if not self._varying:
            self._varying = _varying(self.runs)
        return self._varying.get(workload, [])

    def runs_per_case(self) -> tuple[int, int] | None:
        """Fewest and most measured runs of any case (adaptive repetition varies it)."""
        counts = case_counts(self.runs)
        return (min(counts.values()), max(counts.values())) if counts else None

    def workloads(self) -> list[str]:
        if not self._workloads:
            self._workloads = list(dict.fromkeys(r.workload for r in self.runs))
        return list(self._workloads)


# Parameters whose absence is a value: a case without `sync` writes with no sync mode, so
# `sync: [none, {fdatasync: 1}]` varies although only one of its cases carries it.
IMPLIED = {syncmode.PARAM: syncmode.NONE}


def _varying(runs: Sequence[RunResult]) -> dict[str, list[str]]:
    values: dict[str, dict[str, set[object]]] = {}
    for run in runs:
        per = values.setdefault(run.workload, {})
        for k, v in run.params.items():
            # Parameter values are scalars (hashable); repr keeps 1 and True apart.
            per.setdefault(k, set()).add(repr(v))
        for k, v in IMPLIED.items():
            if k not in run.params:
                per.setdefault(k, set()).add(repr(v))
    return {w: [k for k, vs in per.items() if len(vs) > 1] for w, per in values.items()}


def case_counts(runs: Sequence[RunResult]) -> dict[tuple[str, str, str], int]:
    """Measured runs per case (target, workload, params)."""
    counts: dict[tuple[str, str, str], int] = {}
    for run in runs:
        if run.status is Status.OK and not run.warmup:
            key = (run.target, run.workload, params_key(run.params))
            counts[key] = counts.get(key, 0) + 1
    return counts


def build(experiments: list[ExperimentRow], targets: list[TargetRow], runs: list[RunResult],
          options: ReportOptions | None = None, *,
          totals: Sequence[CaseHistogram] | None = None,
          export: RunExport | None = None,
          fingerprints: Sequence[Mapping[str, Any]] = ()) -> Report:
    """The report of `runs`; `totals` are the per-case histograms if already summed (the
    store keeps them), `export` streams the complete per-run data for CSV and JSON,
    `fingerprints` are the experiments' environments (one each, in order): where they
    differ, a warning names the fields."""
    # Building allocates millions of small objects on a large database, and the cyclic
    # collector would rescan the whole heap again and again (100 000 runs: 20.5 s with it,
    # about 15 s without). Nothing here creates reference cycles.
    with paused_gc():
        report = _build(experiments, targets, runs, options or ReportOptions(), totals)
    report.warnings[:0] = environments.warnings(fingerprints)
    report.export = export
    return report


def _build(experiments: list[ExperimentRow], targets: list[TargetRow], runs: list[RunResult],
           options: ReportOptions, totals: Sequence[CaseHistogram] | None) -> Report:
    runs, bad_values = badvalues.believable(runs)
    if totals is not None:
        totals = badvalues.believable_totals(totals)
    report = Report(experiments, targets, runs, summarize_runs(runs, options.metrics),
                    options=options)
    report.curves, figures = curves.build(
        runs, totals if totals is not None else case_histograms(runs), options.metrics)
    report.summaries += figures
    names = report.target_order()
    report.baseline = options.baseline or verdicts.baseline_target(experiments, names)
    if options.baseline and options.baseline not in names:
        raise VolbenchError(f"baseline {options.baseline}: no target of that name in these "
                            f"results (targets: {', '.join(names)})"
                            + (f"; {hint}" if (hint := did_you_mean(options.baseline, names))
                               else ""))
    report.thresholds = verdicts.thresholds(experiments)
    report.design = verdicts.sequential_design(experiments)
    labels = {w: report.varying_params(w) for w in report.workloads()}
    # Runs before a case's steady window (the experiment's steady:) are not judged, and a
    # bursting run is judged on its sustained window (timeline.on_sustained).
    steady = steadiness.steadiness(report.summaries, steadiness.spec_of(experiments), labels,
                                   runs)
    kept = [r for i, r in enumerate(runs) if i not in steady.before]
    sustained = timeline.on_sustained(kept)
    judged = (report.summaries if sustained is None and not steady.before
              else summarize_runs(sustained or kept, options.metrics))
    report.verdicts = verdicts.against_baseline(judged, report.baseline, report.thresholds,
                                                report.design)
    report.percentiles = merged_percentiles(runs, totals)
    report.durability = durability.rows(runs)
    regimes = timeline.run_regimes(runs)
    report.time_lines = [*timestory.time_lines(runs, regimes, labels), *steady.lines]
    for index, run in enumerate(runs):
        if run.status is not Status.OK or run.warmup:
            continue
        found = checks.run_stalls(run)
        if found:
            report.stalls[index] = found
        check = checks.io_check(run)
        if check is not None:
            report.io_checks[index] = check
    memory = report.environment.get("checked", {}).get("memory_bytes")
    report.warnings = [
        *bad_values,
        *checks.failures(runs, targets),
        *_baseline_warnings(report),
        *checks.few_runs(case_counts(runs)),
        *checks.cache_warnings(runs, report.io_checks, memory if isinstance(memory, int)
                               else None, labels),
        *checks.caches_not_dropped(runs),
        *checks.case_checks(report.summaries, labels),
        *readable.stalled_runs(report.summaries, runs, labels),
        *readable.wide_intervals(report.summaries, labels),
        *checks.stall_warnings(runs, report.stalls, labels),
        *timeline.ended_inside(runs, regimes, labels),
        *timeline.refills(runs, regimes, labels),
        *steady.warnings,
        *labburst.short_runs(runs, targets, report.environment, labels),
        *commitsettings.warnings(runs, names),
        *durability.warnings(report.durability),
    ]
    return report


def _baseline_warnings(report: Report) -> list[ReportWarning]:
    base = report.baseline
    if base is None or len(report.target_order()) < 2:
        return []
    if not any(s.target == base for s in report.summaries):
        return [ReportWarning("baseline", f"baseline target {base} has no finished runs: "
                              "nothing can be compared with it; fix it or name another "
                              "baseline: in the experiment file", target=base)]
    return []
