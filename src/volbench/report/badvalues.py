"""Stored values no measurement can have (NaN, infinity, 10^400) are left out of a report,
each with a warning naming its run: one bad value must not stop a whole report.

The importer refuses such values now; databases written before, or edited by
hand, may still hold them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from volbench.core.model import CaseHistogram, Parsed, RunResult
from volbench.core.valuecheck import all_fine, parsed_problems, value_problem
from volbench.report.checks import ReportWarning


def _name(run: RunResult) -> str:
    run_id = run.annotations.get("run_id")
    which = f"run {run_id}" if run_id is not None else "a run"
    return f"{which} ({run.target} / {run.workload}, repetition {run.repetition})"


def _clean(parsed: Parsed) -> Parsed:
    metrics = tuple(m for m in parsed.metrics if value_problem(m.value) is None)
    series = tuple(replace(s, points=tuple(p for p in s.points if value_problem(p[0]) is None
                                           and value_problem(p[1]) is None))
                   for s in parsed.series)
    hists = tuple(replace(h, bins=tuple(b for b in h.bins if value_problem(b[0]) is None
                                        and value_problem(b[1]) is None))
                  for h in parsed.histograms)
    return Parsed(metrics, series, hists)


def believable(runs: Sequence[RunResult]) -> tuple[list[RunResult], list[ReportWarning]]:
    """`runs` (same order) without unbelievable values, and one warning per run that had
    some."""
    out: list[RunResult] = []
    warnings: list[ReportWarning] = []
    for index, run in enumerate(runs):
        problems = list(parsed_problems(run.parsed))
        if not problems:
            out.append(run)
            continue
        out.append(replace(run, parsed=_clean(run.parsed)))
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        warnings.append(ReportWarning(
            "bad-value", f"{_name(run)}: {problems[0]}{more}; left out of this report (the "
            "stored value cannot be a measurement: re-run or delete that run)",
            target=run.target, workload=run.workload, params=run.params, runs=(index,)))
    return out, warnings


def believable_totals(totals: Sequence[CaseHistogram]) -> list[CaseHistogram]:
    """Summed histograms without bins of unbelievable values (their runs are warned of)."""
    return [t if all_fine(itertools.chain.from_iterable(t.bins))
            else replace(t, bins=tuple((v, c) for v, c in t.bins
                                       if value_problem(v) is None and value_problem(c) is None))
            for t in totals]
