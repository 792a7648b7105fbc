"""Power cuts in the report's sections: the durability table (report/durability.py
counts), and each cut on its run's time-series chart."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from volbench.core.model import RunResult, Series
from volbench.report.durability import DurabilityRow, words
from volbench.report.table import Table, case_label

COLUMNS = ("target", "workload", "case", "cuts", "verdict", "acknowledged per cut",
           "recovery (median, max)", "fsck")


def _seconds(values: Sequence[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.1f} s, {max(values):.1f} s"


def table(found: Sequence[DurabilityRow], shown: Mapping[str, list[str]]) -> Table:
    """One row per case that was cut: the verdict, what was acknowledged per cut, how long
    the recovery took, and what the read-only filesystem checks found."""
    body = []
    for row in found:
        acked = "—" if row.acked_median is None else f"{row.acked_median:g} {row.counts}"
        fsck = "clean" if not row.fsck_problems else f"{row.fsck_problems} finding(s)"
        if row.torn:
            fsck += f"; {row.torn} torn block(s)"
        body.append((row.target, row.workload,
                     case_label(row.params, shown.get(row.workload, [])),
                     str(row.verdict.cuts), words(row), acked, _seconds(row.recovery), fsck))
    return Table("Power cuts: what was acknowledged and then lost", COLUMNS, tuple(body))


def cut_window(run: RunResult, series: Series) -> tuple[tuple[float, float, str], ...]:
    """The cut on the run's chart: from its moment to the series' end, labelled with what
    it lost ("power cut: lost 37 acknowledged writes", "power cut: nothing lost")."""
    recorded = run.annotations.get("power_cut") or {}
    moment = recorded.get("cut_s")
    if moment is None or not series.points:
        return ()
    end = max(float(moment) + 1.0, max(t for t, _ in series.points))
    lost = {m.name: m.value for m in run.metrics if m.tags.get("fault") == "power-cut"}
    if lost.get("recovered") == 0:
        text = "power cut: no recovery"
    elif lost.get("commits_lost"):
        text = f"power cut: lost {lost['commits_lost']:g} commits"
    elif lost.get("acked_lost"):
        text = f"power cut: lost {lost['acked_lost']:g} acknowledged writes"
    else:
        text = "power cut: nothing lost"
    return ((float(moment), end, text),)
