"""Steady state over rounds in the report (the experiment's `steady:` section).

For every case of the tracked metric, the SNIA rule (volbench.stats.steady) over its runs
in run order: a line saying from which run it held, a warning when it never did, and the
runs before the steady window left out of the verdicts (they are preconditioning: the
device was still changing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.config.steady import SteadySpec, from_document
from volbench.core.model import ExperimentRow
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
               labels: Mapping[str, list[str]]) -> Steadiness:
    if spec is None:
        return Steadiness([], [], frozenset())
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
