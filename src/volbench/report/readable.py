"""What a reader cannot take off a figure as it stands, said in words (issue 32).

- **A run that completed nothing** (0 IOPS, 0 tps, 0 B/s: a server that stopped, a disk
  that stalled for the whole run) is not a slow run: it is a stalled run, and the report
  says so and how it enters the statistics. It is kept (it is what the target did), so
  the case's figures are arithmetic means on raw values, their intervals' low ends held
  at 0, and the answer's figure has no interval; before, it read as an "outlier" and gave
  an interval of [-769, 2104] tx/s.
- **An interval too wide to read**: valid, but it does not know the order of magnitude.
  A mean's interval that reaches 10 times beyond every run (three runs, one of them far
  off, gave a Cox interval up to 170 times the largest run; `summary_too_wide`), or a
  ratio's that holds both -90 % and +900 % ("+300.5 % [-100.0, +1602.4]":
  `ratio_too_wide`). The tables mark it "too wide" and a warning or the note says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from volbench.core import metricinfo
from volbench.core.model import RunResult, params_key
from volbench.core.units import format_value
from volbench.report.cases import CaseSummary
from volbench.report.checks import ReportWarning, case_text, describe_case, metric_text
from volbench.stats.summary import Interval

RATE_UNITS = ("op/s", "tx/s", "B/s")
# An interval reaching this factor beyond every run (or a ratio's below 1/FACTOR and above
# FACTOR at once) does not know the order of magnitude.
FACTOR = 10.0


def summary_too_wide(ci: Interval | None, values: Sequence[float]) -> bool:
    """Whether a mean's interval of non-negative runs reaches FACTOR times beyond them:
    above FACTOR x the largest run, or below the smallest positive run / FACTOR."""
    if ci is None or not values or min(values) < 0.0:
        return False
    positive = [v for v in values if v > 0.0]
    if not positive:
        return False
    return ci.high > FACTOR * max(positive) or 0.0 < ci.low < min(positive) / FACTOR


def ratio_too_wide(ci: Interval | None) -> bool:
    """Whether a ratio's interval holds both a fall to under 1/FACTOR and a rise to over
    FACTOR times: it says nothing about the change's size or direction."""
    return ci is not None and ci.low < 1.0 / FACTOR and ci.high > FACTOR


def stalled(s: CaseSummary) -> list[int]:
    """Positions in the summary's values of the runs that completed nothing (a rate of 0)."""
    if s.unit not in RATE_UNITS:
        return []
    return [i for i, v in enumerate(s.values) if v == 0.0]


def stalled_runs(summaries: Sequence[CaseSummary], runs: Sequence[RunResult],
                 labels: Mapping[str, list[str]]) -> list[ReportWarning]:
    """One warning per case with runs that completed nothing, naming them and saying how
    they enter the figures and verdicts."""
    found: dict[tuple[str, str, str], tuple[CaseSummary, set[int]]] = {}
    for s in summaries:
        if "window" in s.tags or not metricinfo.comparable(s.metric, s.unit, s.tags):
            continue
        zero = stalled(s)
        if zero:
            key = (s.target, s.workload, params_key(s.params))
            _, seen = found.setdefault(key, (s, set()))
            seen.update(s.run_indices[i] for i in zero)
    out = []
    for s, indices in found.values():
        where = describe_case(s.target, s.workload, case_text(s, labels))
        reps = ", ".join(f"rep {runs[i].repetition}" for i in sorted(indices)
                         if 0 <= i < len(runs))
        out.append(ReportWarning(
            "stalled-run",
            f"{where}: {len(indices)} of {len(s.values)} runs completed nothing ({reps}: "
            f"0 {metric_text(s)}): stalled, not slow; counted as 0 in the figures and "
            "verdicts (arithmetic means on raw values, interval ends held at 0); re-run if "
            "the stall was not the target's doing (a stopped server, a full disk)",
            s.target, s.workload, s.params, s.metric, tuple(sorted(indices))))
    return out


def wide_intervals(summaries: Sequence[CaseSummary],
                   labels: Mapping[str, list[str]]) -> list[ReportWarning]:
    """One warning for the cases whose mean's interval is too wide to read (the tables
    mark each "too wide"), naming the first."""
    wide = [s for s in summaries
            if "window" not in s.tags and metricinfo.comparable(s.metric, s.unit, s.tags)
            and summary_too_wide(s.summary.mean_ci, s.values)]
    if not wide:
        return []
    s = wide[0]
    ci = s.summary.mean_ci
    assert ci is not None  # summary_too_wide holds only with an interval
    where = describe_case(s.target, s.workload, case_text(s, labels))
    more = f" and {len(wide) - 1} more case(s)" if len(wide) > 1 else ""
    return [ReportWarning(
        "too-wide",
        f"{where}: the mean {metric_text(s)}'s 95 % interval "
        f"[{format_value(ci.low, s.unit)}, {format_value(ci.high, s.unit)}] reaches ten "
        f"times beyond its {len(s.values)} runs ({format_value(min(s.values), s.unit)} to "
        f"{format_value(max(s.values), s.unit)}){more}, marked \"too wide\" in the tables: "
        "valid, but runs this far apart do not pin a mean down; read the runs themselves "
        "(median, min, max), or run more",
        s.target, s.workload, s.params, s.metric, s.run_indices)]
