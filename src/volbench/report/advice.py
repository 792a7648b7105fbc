"""Advice a user can act on when a verdict cannot be decided.

"More than 1000 runs per side needed" alone tells a user nothing to do. The data still
rule out large differences (the ends of the verdict's interval), the spread says why
(the run-to-run coefficient of variation of both sides, and of the quietest target in
the same case: if one target is quiet the machine is not the only source of noise), and
the way to a decision is less noise per run or a wider threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from volbench.report.cases import CaseSummary
from volbench.stats import Comparison, Verdict

if TYPE_CHECKING:  # verdicts.py imports this module
    from volbench.report.verdicts import VerdictRow


@dataclass(frozen=True)
class Noise:
    """Run-to-run spread behind a comparison: the CVs (stdev / mean) of candidate and
    baseline, and the quietest target measuring the same case with its CV."""

    candidate_cv: float | None
    baseline_cv: float | None
    quietest_target: str
    quietest_cv: float | None

    @property
    def cv(self) -> float | None:
        """The larger of the two sides' CVs (what the comparison's spread is made of)."""
        known = [v for v in (self.candidate_cv, self.baseline_cv) if v is not None]
        return max(known) if known else None


def with_noise(rows: Sequence[VerdictRow], summaries: Sequence[CaseSummary]
               ) -> list[VerdictRow]:
    """The rows with their Noise (every row carries it; the text uses it when undecided)."""
    quiet: dict[tuple[str, str, str, str], CaseSummary] = {}
    for s in summaries:
        best = quiet.get(s.comparison_key)
        if s.summary.cv is not None and (best is None or best.summary.cv is None
                                         or s.summary.cv < best.summary.cv):
            quiet[s.comparison_key] = s
    out = []
    for row in rows:
        q = quiet.get(row.candidate.comparison_key)
        noise = Noise(row.candidate.summary.cv, row.baseline.summary.cv,
                      "" if q is None else q.target, None if q is None else q.summary.cv)
        out.append(replace(row, noise=noise))
    return out


def _pct(value: float) -> str:
    return f"{value:+.1f} %"


def ruled_out_text(c: Comparison) -> str:
    """"rules out changes beyond -41.0 % and +36.5 %": the verdict interval's ends; "rules
    out only changes beyond +110.2 %" when its low end is a ratio of 0 (a case with a run
    that completed nothing: no drop can be ruled out)."""
    ci = c.ratio_ci
    if ci is None:
        return ""
    if ci.low <= 0.0:
        return f"rules out only changes beyond {_pct((ci.high - 1) * 100)}"
    return f"rules out changes beyond {_pct((ci.low - 1) * 100)} and {_pct((ci.high - 1) * 100)}"


def deciding_threshold(c: Comparison) -> float | None:
    """The smallest threshold (a share, rounded up to a whole percent) at which these runs
    would already read "no difference": their equivalence interval lies inside it. None
    when that would be 100 % or more (nothing a user would call a threshold)."""
    ci = c.equivalence_ci
    if ci is None or ci.low <= 0.0:
        return None
    needed = max(1.0 - ci.low, ci.high - 1.0)
    rounded = math.floor(needed * 100.0) / 100.0 + 0.01
    return rounded if rounded < 1.0 else None


def undecided_note(c: Comparison, noise: Noise | None) -> str:
    """"; rules out changes beyond -41.0 % and +36.5 %; run-to-run CV 19 % (quietest
    target dir 3 %): decide with more runs, longer runs, less other load on the machine,
    or a wider threshold (±45 % would read these runs as no difference)" for a verdict
    that no promised number of runs would decide: more than the maximum, or a spread
    too uncertain to promise one (stats.power), or other work on the machine during a run."""
    if c.verdict is not Verdict.INCONCLUSIVE or c.promises_runs or c.ratio_ci is None:
        return ""
    text = "; " + ruled_out_text(c)
    cv = None if noise is None else noise.cv
    if noise is not None and cv is not None:
        text += f"; run-to-run CV {cv * 100:.0f} %"
        if noise.quietest_cv is not None and noise.quietest_cv < cv / 2:
            text += f" (quietest target {noise.quietest_target} {noise.quietest_cv * 100:.1f} %)"
    ways = "longer runs, less other load on the machine, or a wider threshold"
    if c.had_company and not c.beyond_cap:  # more runs show the slow ones
        ways = "more runs (they show how often the other work slows them), " + ways
    elif c.runs_needed_low is not None:  # more runs would tell how noisy the runs are
        ways = "more runs (they pin the spread down), " + ways
    wider = deciding_threshold(c)
    if wider is not None and wider > c.threshold:
        ways += f" (±{wider * 100:.0f} % would read these runs as no difference)"
    return text + ": decide with " + ways
