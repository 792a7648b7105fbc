"""A faulted run's phases on its time-series chart: shaded and labelled with their level."""

from __future__ import annotations

from dataclasses import replace

from support import make_run
from volbench.core.model import Metric, Parsed, Series
from volbench.report import phaseview
from volbench.report.timeline import level_text


def test_fault_phases_are_shaded_with_their_levels() -> None:
    series = Series("iops", "op/s", tuple((float(t), 500.0) for t in range(1, 31)),
                    {"op": "read"})
    events = [{"done_s": 8.8, "phase": "fail", "error": None},
              {"done_s": 18.8, "phase": "restore", "error": None},
              {"done_s": 29.9, "phase": "teardown", "error": None}]
    run = make_run("r1", {"iops": 700.0}, 1, started=0.0,
                   annotations={"faults": {"events": events, "tool_offset_s": 0.8}},
                   parsed_extra=Parsed(series=(series,)))
    run = replace(run, parsed=Parsed(
        (*run.metrics, Metric("iops", 512.0, "op/s", {"op": "read", "phase": "fail"})),
        (series,)))
    got = phaseview.windows(run, series, level_text)
    assert [(s, e) for s, e, _ in got] == [(8.0, 18.0), (18.0, 30.0)]
    assert got[0][2] == "fail: " + level_text(512.0, "op/s")
    assert got[1][2] == "restore"


def test_a_run_without_faults_has_no_phase_windows() -> None:
    series = Series("iops", "op/s", ((1.0, 5.0),), {"op": "read"})
    run = make_run("r1", {"iops": 5.0}, 1, started=0.0)
    assert phaseview.windows(run, series, level_text) == ()
