"""The fault schedule beside a run: fired on time, journalled first, always ended."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from volbench.config.faults import FaultSpec
from volbench.engine import faultrun
from volbench.faults.base import Action, Command, undo_now
from volbench.system import journal, proc
from volbench.targets.base import Built, TargetSpec


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    return [Command(path=str(data["path"]), text="normal")]


@journal.undoer("fault-test-knob")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


@pytest.fixture
def knob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file standing for a kernel knob; the fake action writes 'faulted' into it."""
    path = tmp_path / "knob"
    path.write_text("normal")
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path / "state"))

    def make(fault: FaultSpec, spec: TargetSpec, built: Built, peers: object) -> Action:
        return Action(fault.action, "fault-test-knob", {"path": str(path)},
                      lambda: [Command(path=str(path), text="faulted")], _undo_commands,
                      facts={"knob": "test"})

    monkeypatch.setattr(faultrun, "make_action", make)
    return path


def until_faulted(knob: Path, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while knob.read_text() != "faulted" and time.monotonic() < deadline:
        time.sleep(0.01)
    return knob.read_text() == "faulted"


def bound(*faults: FaultSpec) -> list[faultrun.Bound]:
    spec = TargetSpec("t", "loopdisk")
    return [faultrun.Bound(i, f, spec, Built("t", "loopdisk", None)) for i, f in
            enumerate(faults)]


def test_a_fault_with_for_fires_and_ends_on_time(knob: Path) -> None:
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.3, "slow", target="t", duration=0.5)),
                                jr.scope())
        seen = []
        with run:
            deadline = time.monotonic() + 20  # generous: a loaded host delays the thread
            while len(run.events) < 2 and time.monotonic() < deadline:
                seen.append(knob.read_text())
                time.sleep(0.02)
    assert seen[0] == "normal" and "faulted" in seen and knob.read_text() == "normal"
    start, end = run.events
    assert (start["action"], start["phase"], start["asked_s"]) == ("slow", "slow", 0.3)
    assert 0.3 <= start["started_s"] <= start["done_s"]
    assert start["commands"] == [{"command": f"echo faulted > {knob}", "returncode": 0,
                                  "output": ""}]
    assert (end["phase"], end["asked_s"]) == ("after", 0.8)
    assert 0.8 <= end["started_s"] <= end["done_s"]
    assert start["facts"] == {"knob": "test"}


def test_a_fault_still_in_effect_ends_with_the_run_even_when_interrupted(knob: Path) -> None:
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.0, "slow", target="t")), jr.scope())
        with pytest.raises(KeyboardInterrupt), run:
            assert until_faulted(knob)
            raise KeyboardInterrupt
        assert knob.read_text() == "normal"
        assert run.events[-1]["phase"] == "teardown"
        lines = [json.loads(line) for line in jr.path.read_text().splitlines()]
    ops = [(r["op"], r.get("kind")) for r in lines]
    assert ("add", "fault-test-knob") in ops and ops[-1][0] == "release"


def test_a_fault_not_yet_due_never_fires(knob: Path) -> None:
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(30.0, "slow", target="t", duration=5)),
                                jr.scope())
        with run:
            time.sleep(0.1)
    assert run.events == [] and knob.read_text() == "normal"


def test_the_journal_entry_is_written_before_the_action_runs(knob: Path, tmp_path: Path
                                                            ) -> None:
    """A volbench killed in the middle of a fault leaves a journal that cleanup undoes."""
    jr = journal.Journal(tmp_path / "state" / "journals" / "dead.jsonl")
    jr._write({"op": "owner", "pid": 2**22 + 1, "start": 1, "label": "killed"})
    run = faultrun.FaultRun(bound(FaultSpec(0.0, "slow", target="t")), jr.scope())
    run.__enter__()
    assert until_faulted(knob)
    run._stop.set()  # the process dies here: nothing ends the fault
    run._thread.join()
    assert knob.read_text() == "faulted"
    removed, errors = journal.cleanup(tmp_path / "state" / "journals")
    assert errors == [] and knob.read_text() == "normal"
    assert any(r.startswith("fault-test-knob") for r in removed)


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
    assert 0.5 <= run.waited_s < 10
    assert start["asked_s"] == 0.2 and start["started_s"] >= 0.2
    assert end["phase"] == "teardown"


def test_a_refused_fault_is_undone_at_once_and_opens_no_phase(
        knob: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """md refuses to fail a RAID0 member: the event says so, the journal entry is undone
    at once, and the later restore opens no phase."""
    def refused(fault: FaultSpec, spec: TargetSpec, built: Built, peers: object) -> Action:
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
