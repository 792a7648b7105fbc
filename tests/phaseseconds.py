"""A faulted run's logged seconds per phase, read back from its store: the reference a
phase's rate is judged against in the same run (its median second), where its mean
would let one second the machine took away (CPU, steal, another test's load) move the
whole phase."""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path

from volbench.core.model import RunResult
from volbench.stats import phases
from volbench.store.db import Store


def the_run(db: Path) -> RunResult:
    """The store's only run but warm-ups, with its series and raw outputs."""
    with sqlite3.connect(db) as con:
        ids = [i for (i,) in con.execute("SELECT id FROM experiments")]
    with Store(db) as store:
        (run,) = [r for r in store.runs(ids, series=True, outputs=True) if not r.warmup]
    return run


def phase_seconds(db: Path, series: str = "iops") -> dict[str, list[float]]:
    """The run's (the only non-warm-up run's) per-second `series`, all ops added up, for
    each phase: only the seconds wholly inside it (as the phase metrics count them:
    the second a fault starts or ends in mixes both phases), on the tool's clock."""
    run = the_run(db)
    faults = run.annotations["faults"]
    by_second: dict[float, float] = {}
    for s in run.parsed.series:
        if s.name == series:
            for t, v in s.points:
                by_second[t] = by_second.get(t, 0.0) + v
    lengths = [m.value or 0.0 for m in run.metrics if m.name == "phase_seconds"]
    end = sum(lengths)  # the phases cover [0, end) exactly
    split = phases.split(phases.cuts(faults["events"], faults["tool_offset_s"]), end)
    out: dict[str, list[float]] = {}
    for phase in split:
        first, last = phases.whole_seconds(phase.start, phase.end)
        out[phase.name] = [by_second.get(float(t), 0.0)
                           for t in range(int(first) + 1, int(last) + 1)]
    return out


def median_second(seconds: dict[str, list[float]], phase: str) -> float:
    """The median of a phase's whole seconds (at least 3: one taken away is outvoted)."""
    got = seconds[phase]
    assert len(got) >= 3, (phase, seconds)
    return float(statistics.median(got))
