"""Advice a user can act on when a verdict cannot be decided.

"More than 1000 runs per side needed" alone tells a user nothing to do. The data still
rule out large differences (the ends of the verdict's interval), the spread says why
(the run-to-run coefficient of variation of both sides, and of the quietest target in
the same case: if one target is quiet the machine is not the only source of noise), and
the way to a decision is less noise per run or a wider threshold.
"""

from __future__ import annotations

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


def undecided_note(c: Comparison, noise: Noise | None) -> str:
    """"; rules out changes beyond -41.0 % and +36.5 %; run-to-run CV 19 % (quietest
    target dir 3 %): decide with longer runs, less other load on the machine, or a wider
    threshold" for a verdict that more than the maximum of runs would not decide."""
    if c.verdict is not Verdict.INCONCLUSIVE or not c.runs_needed_capped or c.ratio_ci is None:
        return ""
    ci = c.ratio_ci
    text = f"; rules out changes beyond {_pct((ci.low - 1) * 100)} and {_pct((ci.high - 1) * 100)}"
    cv = None if noise is None else noise.cv
    if noise is not None and cv is not None:
        text += f"; run-to-run CV {cv * 100:.0f} %"
        if noise.quietest_cv is not None and noise.quietest_cv < cv / 2:
            text += f" (quietest target {noise.quietest_target} {noise.quietest_cv * 100:.1f} %)"
    return text + ": decide with longer runs, less other load on the machine, or a wider threshold"
