"""The fault schedule beside a real process: time zero is the measured process's first
child, and a fault whose command fails (a real `false`) is undone at once."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import faultknob
from bounds import within
from faultknob import _undo_commands, bound
from volbench.config.faults import FaultSpec
from volbench.engine import faultrun
from volbench.faults.base import Action, Command
from volbench.system import journal, proc
from volbench.targets.base import Built, TargetSpec


@pytest.fixture
def knob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return faultknob.install(tmp_path, monkeypatch)


def test_the_schedule_starts_when_the_measured_process_has_a_child(knob: Path) -> None:
    """Time zero is the first child of the measured process (fio's job process), not
    the process start: here a process that sleeps 0.5 s before it starts a child."""
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.2, "slow", target="t")), jr.scope(),
                                wait_for_child=True)
        with run:
            proc.run([sys.executable, "-c", "import subprocess, time; time.sleep(0.5); "
                      "subprocess.run(['sleep', '0.6'])"], timeout=10, tracker=run.tap(None))
    (start, end) = run.events
    # Needs no reference: the 0.5 s and 0.2 s are the test's own schedule (lower bounds).
    within("schedule: waited s", run.waited_s, 0.499, 10)  # at least 0.5
    assert start["asked_s"] == 0.2
    within("schedule: fault started s", start["started_s"], low=0.199)  # at least 0.2
    assert end["phase"] == "teardown"


def test_a_refused_fault_is_undone_at_once_and_opens_no_phase(
        knob: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """md refuses to fail a RAID0 member: the event says so, the journal entry is undone
    at once, and the later restore opens no phase."""
    def refused(fault: FaultSpec, spec: TargetSpec, built: Built, peers: object,
                caps: object = None) -> Action:
        return Action("fail", "fault-test-knob", {"path": str(knob)},
                      lambda: [Command(("false",))], _undo_commands)

    monkeypatch.setattr(faultrun, "make_action", refused)
    knob.write_text("touched")
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.0, "fail", device="/dev/x"),
                                      FaultSpec(0.2, "restore", device="/dev/x")), jr.scope())
        with run:
            deadline = time.monotonic() + 20
            while len(run.events) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.4)
    assert [(e["action"], e["phase"]) for e in run.events] == [("fail", "fail"),
                                                              ("restore", "teardown")]
    assert run.events[0]["error"].startswith("false failed (exit code 1)")
    assert knob.read_text() == "normal"  # its undo ran
