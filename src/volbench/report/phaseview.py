"""The phases of a faulted run on its time-series chart: each fault's time shaded and
labelled with the phase's level ("fail: 512 IOPS"), from the events the run recorded
(annotations `faults`) and its phase metrics (engine/faultphases.py)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from volbench.core.model import RunResult, Series, Status
from volbench.report.data import Report
from volbench.report.table import Table
from volbench.stats import phases

# Phases that are the healthy state: not shaded.
PLAIN = ("before", "after")


def _level(run: RunResult, series: Series, phase: str) -> float | None:
    for m in run.metrics:
        if m.name == series.name and m.tags.get("phase") == phase and \
                {k: v for k, v in m.tags.items() if k != "phase"} == dict(series.tags):
            return m.value
    return None


def windows(run: RunResult, series: Series, level_text: Any
            ) -> tuple[tuple[float, float, str], ...]:
    """(start, end, label) of each fault phase of `run` on the series' time axis;
    `level_text(value, unit)` words a level as the rest of the chart does."""
    recorded: Mapping[str, Any] = run.annotations.get("faults") or {}
    events = recorded.get("events") or []
    if not events or not series.points:
        return ()
    end = max(t for t, _ in series.points)
    split = phases.split(phases.cuts(events, float(recorded.get("tool_offset_s", 0.0))), end)
    out = []
    for phase in split:
        if phase.name in PLAIN:
            continue
        value = _level(run, series, phase.name)
        text = phase.name if value is None else f"{phase.name}: {level_text(value, series.unit)}"
        out.append((phase.start, phase.end, text))
    return tuple(out)


def _phase_levels(run: RunResult) -> tuple[str, list[str]]:
    """The op and 'phase level (% of before)' cells of a run's IOPS per phase, in order."""
    events = (run.annotations.get("faults") or {}).get("events") or []
    order = ["before", *dict.fromkeys(str(e.get("phase")) for e in events
                                        if not e.get("error") and e.get("phase") != "teardown")]
    by: dict[str, dict[str, float | None]] = {}
    for m in run.metrics:
        if m.name == "iops" and "phase" in m.tags:
            by.setdefault(m.tags.get("op", ""), {})[m.tags["phase"]] = m.value
    if not by:
        return "", []
    op = max(by, key=lambda o: by[o].get("before") or 0.0)
    base = by[op].get("before")
    cells = []
    for phase in order:
        value = by[op].get(phase)
        if value is None:
            continue
        share = f" ({100 * value / base:.0f} %)" if base and phase != "before" else ""
        cells.append(f"{phase} {value:.0f}{share}")
    return op, cells


def _metric(run: RunResult, name: str) -> str:
    for m in run.metrics:
        if m.name == name and "phase" not in m.tags:
            if m.value is None:
                return m.note or "—"
            return f"{m.value:.2f}" if name == "rebuild_progress" else f"{m.value:.1f}"
    return "—"


def rebuild_words(run: RunResult, op: str) -> str:
    """The rebuild's length beside the length expected from the member's size and limits,
    and, when the disks' cap is known, the rebuild's and the workload's shares of it:
    "17.0 (expected 16.0); of the cap: rebuild 75 %, workload 25 %"."""
    words = _metric(run, "rebuild_seconds")
    expected = _metric(run, "rebuild_expected_seconds")
    if expected != "—":
        words += f" (expected {expected})"
    shares = {m.name: m.value for m in run.metrics if m.value is not None and (
        m.name == "rebuild_share" or (m.name == "workload_share" and m.tags.get("op", "") == op))}
    if shares:
        words += "; of the cap: " + ", ".join(
            f"{name.split('_')[0]} {100 * value:.0f} %" for name, value in sorted(shares.items()))
    return words


def verify_words(verify: Mapping[str, Any] | None) -> str:
    """The verify pass's verdict against what the faults were expected to lose: "nothing
    lost", or what was lost and whether that was expected (RAID0, a soft mount) or not."""
    if not verify:
        return "—"
    if "skipped" in verify:
        return f"not checked: {verify['skipped']}"
    verdict, expected = str(verify.get("verdict", "")), str(verify.get("expected", ""))
    if verify.get("nothing_lost"):
        return verdict
    if expected and expected != "nothing lost":
        return f"{verdict} (expected: {expected})"
    return f"{verdict}: NOT expected, the faults should have lost nothing"


def phase_table(report: Report) -> Table:
    """One row per faulted run: IOPS per phase (and as % of before), the longest stall,
    the recovery after each fault, the rebuild, I/O errors, and what was refused."""
    rows = []
    for run in report.runs:
        recorded = run.annotations.get("faults")
        if not recorded or run.status is not Status.OK:
            continue
        op, cells = _phase_levels(run)
        refused = "; ".join(f"{e.get('action')}: {e['error']}"[:120]
                            for e in recorded.get("events", []) if e.get("error"))
        recovery = ", ".join(
            f"{m.tags.get('after', '')} " + (f"{m.value:.1f} s" if m.value is not None
                                             else "not recovered")
            for m in run.metrics if m.name == "recovery_seconds" and
            m.tags.get("op", "") == op)
        rows.append((run.target, run.workload, str(run.repetition), op, ", ".join(cells),
                     _metric(run, "stall_seconds"), recovery or "—",
                     rebuild_words(run, op), _metric(run, "io_errors"),
                     verify_words(recorded.get("verify")), refused or "—"))
    headers = ("target", "workload", "rep", "op", "IOPS per phase", "longest stall s",
               "recovery", "rebuild s", "I/O errors", "verify", "refused")
    return Table("Faults: each phase of each faulted run", headers, tuple(rows))


def _shares(run: RunResult) -> dict[str, float]:
    """Each fault phase's IOPS as a share of the run's `before` level (main op)."""
    op, _ = _phase_levels(run)
    levels = {m.tags["phase"]: m.value for m in run.metrics
              if m.name == "iops" and "phase" in m.tags and m.tags.get("op", "") == op}
    base = levels.get("before")
    if not base:
        return {}
    return {phase: value / base for phase, value in levels.items()
            if phase not in PLAIN and value is not None}


def answer_lines(report: Report, workload: str) -> list[str]:
    """The answer block's lines for a workload's faults, one per phase, targets side by
    side: "  under fail: r10 keeps 96 % of its IOPS, r1 51 % (median of runs)". The
    share is of each run's own `before` level, so targets of different speeds compare."""
    by: dict[str, dict[str, list[float]]] = {}
    for run in report.runs:
        if run.workload != workload or run.status is not Status.OK or \
                not run.annotations.get("faults"):
            continue
        for phase, share in _shares(run).items():
            by.setdefault(phase, {}).setdefault(run.target, []).append(share)
    out = []
    order = report.target_order()
    for phase, found in by.items():
        # Targets in the report's order (the baseline first), as the case lines above.
        targets = {t: found[t] for t in sorted(found, key=lambda t: (
            order.index(t) if t in order else len(order), t))}
        cells = [f"{t} {100 * statistics.median(v):.0f} %" for t, v in targets.items()]
        first, *_ = targets
        cells[0] = f"{first} keeps {100 * statistics.median(targets[first]):.0f} % of its IOPS"
        runs = sum(len(v) for v in targets.values())
        out.append(f"  under {phase}: {', '.join(cells)} "
                   f"(median of {runs} run{'s' if runs > 1 else ''})")
    return out
