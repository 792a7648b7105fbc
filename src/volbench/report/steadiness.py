"""Steady state over rounds in the report (the experiment's `steady:` section).

For every case of the tracked metric, the SNIA rule (volbench.stats.steady) over its runs
in run order: a line saying from which run it held, a warning when it never did, and the
runs before the steady window left out of the verdicts (they are preconditioning: the
device was still changing).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.config.steady import (
    SS_ATTAINED,
    SS_DRIFT,
    SS_NOISE_RANGE,
    SS_RANGE,
    SS_SECONDS,
    SS_SLOPE,
    SS_SMALLEST_DRIFT,
    SteadySpec,
    fio_slope_limit,
    from_document,
    steady_in_run,
)
from volbench.core.model import ExperimentRow, RunResult, Status, canonical_json, params_key
from volbench.report.cases import CaseSummary
from volbench.report.checks import ReportWarning, case_text, describe_case, metric_text
from volbench.report.timeline import TimeLine
from volbench.stats.steady import steady_state


@dataclass(frozen=True)
class Steadiness:
    lines: list[TimeLine]
    warnings: list[ReportWarning]
    # Positions in the report's runs that ran before their case's steady window.
    before: frozenset[int]


def spec_of(experiments: Sequence[ExperimentRow]) -> SteadySpec | None:
    """The latest experiment's `steady:` section."""
    for row in reversed(experiments):
        spec = from_document(row.document)
        if spec is not None:
            return spec
    return None


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{share * 100:.1f} %"


def steadiness(summaries: Sequence[CaseSummary], spec: SteadySpec | None,
               labels: Mapping[str, list[str]], runs: Sequence[RunResult] = ()
               ) -> Steadiness:
    if spec is None:
        return Steadiness([], [], frozenset())
    if spec.in_run:  # fio's figures are per run, not summarised metrics
        return _within_runs(runs, spec, labels)
    lines: list[TimeLine] = []
    warnings: list[ReportWarning] = []
    before: set[int] = set()
    limits = f"limits {spec.range * 100:g} % / {spec.slope * 100:g} %"
    for s in summaries:
        if s.metric != spec.metric or "window" in s.tags:
            continue
        found = steady_state(s.values, window=spec.window, range_limit=spec.range,
                             slope_limit=spec.slope)
        where = f"{describe_case(s.target, s.workload, case_text(s, labels))} {metric_text(s)}"
        if found.rounds is not None:
            first, last = found.rounds
            before.update(s.run_indices[: first - 1])
            lines.append(TimeLine(s.target, s.workload, s.params, (
                f"{where}: steady from run {first} of {found.n} (runs {first}–{last}: range "
                f"{_pct(found.range_share)}, slope {_pct(found.slope_share)} of the mean; "
                f"{limits}); verdicts use runs {first}–{found.n}")))
            continue
        warnings.append(ReportWarning(
            "not-steady",
            f"{where}: not steady after {found.n} run(s) (SNIA rule over {spec.window} rounds; "
            f"last window: range {_pct(found.range_share)}, slope {_pct(found.slope_share)} "
            f"of the mean, {limits}): the device is still changing; run more rounds "
            "(volbench run FILE --resume --runs N) or precondition it",
            s.target, s.workload, s.params, s.metric, s.run_indices))
    return Steadiness(lines, warnings, frozenset(before))



def _case_runs(runs: Sequence[RunResult]) -> dict[tuple[str, str, str, str], list[RunResult]]:
    """Measured OK runs that carry fio's steady-state figures, by case and job tags, in
    run order."""
    out: dict[tuple[str, str, str, str], list[RunResult]] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup:
            continue
        for m in run.parsed.metrics:
            if m.name == SS_ATTAINED:
                key = (run.target, run.workload, params_key(run.params), canonical_json(m.tags))
                out.setdefault(key, []).append(run)
    return out


def _figures(run: RunResult, tags: str) -> dict[str, float]:
    return {m.name: m.value for m in run.parsed.metrics
            if m.name.startswith("ss_") and m.value is not None
            and canonical_json(m.tags) == tags}


def _within_runs(runs: Sequence[RunResult], spec: SteadySpec,
                 labels: Mapping[str, list[str]]) -> Steadiness:
    """`steady: {within: run}`: per case, in how many runs fio found the slope criterion met
    and the window's range held too, and after how long fio stopped them."""
    lines: list[TimeLine] = []
    warnings: list[ReportWarning] = []
    rule = (f"fio {spec.metric}_slope under {fio_slope_limit(spec) * 100:.3g} %/s over "
            f"{spec.window} s{f' after a {spec.ramp:g} s ramp' if spec.ramp else ''}, "
            f"range within {spec.range * 100:g} %")
    for (target, workload, _, tags), case in _case_runs(runs).items():
        figures = [_figures(run, tags) for run in case]
        steady = [f for f in figures
                  if steady_in_run(f.get(SS_ATTAINED, 0.0), f.get(SS_RANGE), spec,
                                   f.get(SS_DRIFT, 0.0), f.get(SS_NOISE_RANGE, 0.0))]
        fio_only = sum(1 for f in figures if f.get(SS_ATTAINED, 0.0) >= 1) - len(steady)
        extra = (f"; in {fio_only} more fio's slope criterion held but the range or the "
                 "level (a drift beyond the noise) did not"
                 if fio_only else "")
        params = case[0].params
        label = " ".join(f"{k}={params[k]}" for k in labels.get(workload, []) if k in params)
        where = describe_case(target, workload, label)
        if steady:
            stopped = statistics.median(f[SS_SECONDS] for f in steady if SS_SECONDS in f)
            lines.append(TimeLine(target, workload, params, (
                f"{where}: steady within the run in {len(steady)} of {len(case)} run(s) "
                f"({rule}); fio stopped them after {stopped:.1f} s (median){extra}"
                f"{_resolution(steady, spec)}")))
            continue
        last = figures[-1]
        warnings.append(ReportWarning(
            "not-steady",
            f"{where}: never steady within a run in {len(case)} run(s) ({rule}; last "
            f"run's final window: range {_pct_of(last.get(SS_RANGE))}, slope "
            f"{_pct_of(last.get(SS_SLOPE))} of the mean{extra}): they ran their full "
            "runtime; run longer or precondition the device",
            target, workload, params, spec.metric))
    return Steadiness(lines, warnings, frozenset())


def _resolution(figures: Sequence[dict[str, float]], spec: SteadySpec) -> str:
    """What the window could tell (issue 32): "; over 5 s at this noise only a drift of
    14 % or more could be told from the noise (median of the runs)", when that is more
    than the slope limit; empty for windows that see the limit."""
    smallest = [f[SS_SMALLEST_DRIFT] for f in figures if SS_SMALLEST_DRIFT in f]
    if not smallest or statistics.median(smallest) <= spec.slope * 100:
        return ""
    told = statistics.median(smallest)
    if told >= 100:
        return (f"; at this noise a {spec.window} s window cannot tell a drift from the "
                "noise (the runs' median): a longer window can")
    return (f"; over {spec.window} s at this noise only a drift of {told:.0f} % or more could "
            "be told from the noise (the runs' median): a longer window tells smaller ones")


def _pct_of(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} %"
