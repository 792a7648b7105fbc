"""The phases of a faulted run on its time-series chart: each fault's time shaded and
labelled with the phase's level ("fail: 512 IOPS"), from the events the run recorded
(annotations `faults`) and its phase metrics (engine/faultphases.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volbench.core.model import RunResult, Series
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
