"""One comparison, one verdict: which rows of a verdict table are verdicts, and how they
share their error.

The headline comparisons (volbench.core.headline: IOPS for random I/O, bandwidth for
sequential, tps, real/other for jobs; every primary metric of a case without one) form
one **family**. Their tests and intervals are at Holm's step-down levels
(volbench.stats.multiple.holm_levels), so identical targets get any headline
"faster/slower" in at most 5 % of experiments however many targets and workloads the
table holds (bench/calibration.py --only family). Every other row is a description: its
interval is a plain 95 % one for that metric alone, and its text says it is not a
verdict. Bandwidth beside IOPS at one block size is the same measurement, judged once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from volbench.core.headline import has_headline, headline
from volbench.core.model import params_key
from volbench.report.cases import CaseSummary
from volbench.stats.multiple import holm_levels

FAMILY_ALPHA = 0.05
HEADLINE = "headline"
SECONDARY = "secondary"
SAME = "same measurement"
# IOPS and bandwidth of one fio job at a fixed block size: bw = iops × bs.
_TWINS = {"iops": "bw", "bw": "iops"}


@dataclass(frozen=True)
class Family:
    """How the headline verdicts share their error: `method` over `size` comparisons at
    family-wise `alpha` (any false "faster/slower" among them at most alpha)."""

    method: str
    size: int
    alpha: float

    def header(self) -> str:
        """The table header's statement, e.g. "headline verdicts: Holm over 6 comparisons,
        5 % family-wise"."""
        if self.size == 1:
            return "one headline verdict at 5 %"
        return (f"headline verdicts: {self.method} over {self.size} comparisons, "
                f"{self.alpha * 100:g} % family-wise; other metrics are descriptions "
                "(95 % each), not verdicts")


def roles(cases: Sequence[CaseSummary]) -> list[tuple[str, str]]:
    """(role, same_as) per compared case: HEADLINE, SECONDARY, or SAME with the metric
    judged instead. A case (target, workload, parameters) without any headline metric
    keeps all its rows as headline, as the report always did for bonnie++'s columns."""
    groups: dict[tuple[str, str, str], list[CaseSummary]] = {}
    for s in cases:
        groups.setdefault((s.target, s.workload, params_key(s.params)), []).append(s)
    out: list[tuple[str, str]] = []
    for s in cases:
        names = [(g.metric, g.tags) for g in groups[(s.target, s.workload, params_key(s.params))]]
        if not has_headline(names, s.params) or headline(s.metric, s.tags, s.params):
            out.append((HEADLINE, ""))
            continue
        # bw = iops × bs only at one block size (not with bssplit or bsrange).
        fixed = not ({"bssplit", "bsrange"} & set(s.params))
        twin = _TWINS.get(s.metric, "") if fixed else ""
        judged = bool(twin) and any(
            name == twin and dict(tags) == dict(s.tags) and headline(name, tags, s.params)
            for name, tags in names)
        out.append((SAME, twin) if judged else (SECONDARY, ""))
    return out


def family_levels(
    p_values: Sequence[float | None],
    significant_at: Callable[[int, float], bool],
    alpha: float = FAMILY_ALPHA,
) -> tuple[Family, list[float]]:
    """Holm's level for each headline comparison (in order) and the family they form."""
    levels = holm_levels(p_values, alpha, significant_at)
    return Family("Holm", len(p_values), alpha), levels
