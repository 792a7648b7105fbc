"""What power cuts lost, per case, with its uncertainty; and the words the answer adds to
a target's speed ("1.8× faster — lost acknowledged writes in 7 of 20 power cuts").

Each cut run stores `recovered` (1/0), `acked_lost` / `acked_writes` (the probe) or
`commits_lost` / `commits_acked` (pgbench's ledger), `recovery_seconds` and
`fsck_problems`, tagged fault=power-cut (engine/powercutrun.py). A cut *loses data* if
it lost any acknowledged write or commit, or the stack did not come back; the share of
such cuts is bounded by stats.durability (Clopper-Pearson).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from volbench.core.model import RunResult, Status, params_key
from volbench.report.checks import ReportWarning
from volbench.stats.durability import Verdict, streak_p, verdict

METRICS = ("recovered", "acked_lost", "acked_writes", "commits_lost", "commits_acked",
           "recovery_seconds", "torn_blocks", "fsck_problems")
TAG = ("fault", "power-cut")


def _value(run: RunResult, name: str) -> float | None:
    for m in run.metrics:
        if m.name == name and m.tags.get(TAG[0]) == TAG[1]:
            return m.value
    return None


def is_cut(run: RunResult) -> bool:
    """A measured run that was cut and counted."""
    return run.status is Status.OK and not run.warmup and _value(run, "recovered") is not None


@dataclass(frozen=True)
class DurabilityRow:
    """One case's cuts: the verdict and what the cuts found."""

    target: str
    workload: str
    params: Mapping[str, Any]
    verdict: Verdict
    # "writes" (the probe) or "commits" (pgbench).
    counts: str
    acked_median: float | None
    recovery: tuple[float, ...]
    fsck_problems: int
    torn: int
    # The runs test on the cuts' outcomes in order (stats.durability.streak_p).
    streak_p: float | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.target, self.workload, params_key(dict(self.params))


def rows(runs: Sequence[RunResult]) -> list[DurabilityRow]:
    """Every case with cut runs, in run order."""
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for run in runs:
        if is_cut(run):
            groups.setdefault((run.target, run.workload, params_key(run.params)), []).append(run)
    return [_row(cut) for cut in groups.values()]


def _row(cut: list[RunResult]) -> DurabilityRow:
    commits = any(_value(r, "commits_lost") is not None for r in cut)
    lost_name, acked_name = ("commits_lost", "commits_acked") if commits else \
        ("acked_lost", "acked_writes")
    lost = [int(_value(r, lost_name) or 0) for r in cut]
    recovered = [bool(_value(r, "recovered")) for r in cut]
    acked = [v for r in cut if (v := _value(r, acked_name)) is not None]
    recovery = tuple(v for r in cut if (v := _value(r, "recovery_seconds")) is not None)
    first = cut[0]
    ordered = sorted(zip(cut, lost, recovered, strict=True), key=lambda x: x[0].started)
    return DurabilityRow(first.target, first.workload, dict(first.params),
                         verdict(lost, recovered), "commits" if commits else "writes",
                         statistics.median(acked) if acked else None, recovery,
                         sum(int(_value(r, "fsck_problems") or 0) for r in cut),
                         sum(int(_value(r, "torn_blocks") or 0) for r in cut),
                         streak_p([n > 0 or not ok for _, n, ok in ordered]))


STREAK_ALPHA = 0.05


def warnings(found: Sequence[DurabilityRow]) -> list[ReportWarning]:
    """A case whose losing cuts came in streaks: its bound assumes independent cuts."""
    out = []
    for row in found:
        if row.streak_p is not None and row.streak_p < STREAK_ALPHA:
            out.append(ReportWarning(
                "durability-streaks",
                f"{row.target} {row.workload}: its losing power cuts came in streaks (a "
                f"runs test: p = {row.streak_p:.3f}); the bound on the share of cuts that "
                "lose data assumes independent cuts, and claims too much here (look at the "
                "cuts' moments in the runs table; docs/durability.md)",
                target=row.target, workload=row.workload, params=dict(row.params)))
    return out


def _what(row: DurabilityRow) -> str:
    return "committed transactions" if row.counts == "commits" else "acknowledged writes"


def words(row: DurabilityRow) -> str:
    """The verdict in words: "lost nothing in 20 cuts (at most 13.9 % of cuts lose data,
    95 % upper bound)" or "lost acknowledged writes in 7 of 20 cuts (median 40, up to
    120)", the cuts it did not come back from, and the share's interval."""
    v = row.verdict
    if v.lost_nothing:
        return (f"lost nothing in {v.cuts} cut{'s' if v.cuts != 1 else ''} (at most "
                f"{100 * v.upper:.1f} % of cuts lose data, 95 % upper bound)")
    parts = []
    if v.with_losses:
        parts.append(f"lost {_what(row)} in {v.with_losses} of {v.cuts} cuts (median "
                     f"{v.median_lost:g}, up to {v.max_lost})")
    if v.failed_recoveries:
        parts.append(f"did not recover from {v.failed_recoveries} of {v.cuts} cuts")
    return "; ".join(parts) + (f" ({100 * v.low:.0f}-{100 * v.high:.0f} % of cuts lose "
                               "data, 95 %)")


def short(row: DurabilityRow) -> str:
    """The answer line's addition: "lost acknowledged writes in 7 of 20 power cuts",
    "lost nothing in 20 power cuts (≤ 13.9 %)"."""
    v = row.verdict
    if v.lost_nothing:
        return f"lost nothing in {v.cuts} power cuts (≤ {100 * v.upper:.1f} %)"
    found = []
    if v.with_losses:
        found.append(f"lost {_what(row)} in {v.with_losses} of {v.cuts} power cuts")
    if v.failed_recoveries:
        found.append(f"no recovery after {v.failed_recoveries} of {v.cuts}")
    return "; ".join(found)


def lookup(found: Sequence[DurabilityRow]) -> dict[tuple[str, str, str], DurabilityRow]:
    """The rows by (target, workload, params key): what the answer's lines look up."""
    return {row.key: row for row in found}
