"""The fault schedule beside a run: fired on time, journalled first, always ended."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import faultknob
from faultknob import bound, until_faulted
from volbench.config.faults import FaultSpec
from volbench.engine import faultrun
from volbench.system import journal


@pytest.fixture
def knob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return faultknob.install(tmp_path, monkeypatch)


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


def test_a_fault_ended_at_teardown_is_sampled_after_its_undo(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A fault whose end comes after the run (a thin pool freed at teardown, when exhaust's
    own steps outlasted the run) still shows the state its undo left in the record."""
    knob = faultknob.install(tmp_path, monkeypatch, sampled=True)
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.0, "slow", target="t", duration=60)),
                                jr.scope())
        with run:
            assert until_faulted(knob)
    assert run.events[-1]["phase"] == "teardown"
    assert run.samples[-1]["knob"] == "normal"


def test_a_fault_not_yet_due_never_fires_and_says_so(knob: Path) -> None:
    """Issue 34: it used to leave no event at all; its run now fails naming it
    (engine/execution.py), and its end (`for:`) is no step of its own."""
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(30.0, "slow", target="t", duration=5)),
                                jr.scope())
        with run:
            time.sleep(0.1)
    assert knob.read_text() == "normal"
    (event,) = run.events
    assert event["phase"] == "not fired" and event["action"] == "slow"
    assert event["error"].startswith("not fired: the run ended 0.1 s into its schedule")
    assert run.unfired == [event]


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


@pytest.mark.parametrize(("start", "end", "phase"), [("cut", "restore", "after"),
                                                      ("fail", "restore", "restore")])
def test_the_phase_an_end_opens_depends_on_the_fault_it_ends(knob: Path, start: str, end: str,
                                                             phase: str) -> None:
    # 'restore' ends both: after md's fail the rebuild runs (a phase of its own); after an
    # iSCSI cut the path is simply back.
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(0.1, start, target="t"),
                                      FaultSpec(0.3, end, target="t")), jr.scope())
        with run:
            deadline = time.monotonic() + 20
            while len(run.events) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
    assert [e["phase"] for e in run.events[:2]] == [start, phase]


def test_a_rebuild_not_yet_started_is_sampled_until_it_has_run() -> None:
    """md starts a recovery after `mdadm --add` returns: a first sample without one must
    not end the sampling (it did, and the rebuild's progress was lost); one after a
    running rebuild does (it finished)."""
    states = iter([None, None, {"fraction": 0.5}, None, {"fraction": 0.1}])

    def md_sampler() -> dict[str, Any]:
        return {"rebuild": next(states)}

    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(30.0, "slow", target="t")), jr.scope())
        run._samplers.append(md_sampler)
        for _ in range(5):
            run._sample()
    assert [s["rebuild"] for s in run.samples] == [None, None, {"fraction": 0.5}, None]



def test_the_zero_is_counted_from_the_process_start_not_the_runs_entry(knob: Path) -> None:
    """zero_after_s says how long after the measured process's start the schedule's zero
    came (docs/faults.md). The run is entered before the process starts; counted from
    the entry, the steps in between (here a planted 0.4 s) were added to it. Without a
    child to wait for, the zero is the entry: 0.4 s before the process's start."""
    with journal.opened("test") as jr:
        run = faultrun.FaultRun(bound(FaultSpec(60.0, "slow", target="t")), jr.scope())
        with run:
            time.sleep(0.4)  # what volbench does between the entry and the process's start
            process_started = time.time()
    zero = faultrun.recorded(run, process_started)["zero_after_s"]
    assert -0.6 < zero <= -0.4, zero
    assert 0.0 <= faultrun.recorded(run)["zero_after_s"] < 0.35  # no process: the entry
