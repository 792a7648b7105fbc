"""A stand-in fault for the schedule tests (tests/unit and tests/system): a file plays a
kernel knob; the action writes 'faulted' into it, its undo 'normal'."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from volbench.config.faults import FaultSpec
from volbench.engine import faultrun
from volbench.faults.base import Action, Command, undo_now
from volbench.system import journal
from volbench.targets.base import Built, TargetSpec


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    return [Command(path=str(data["path"]), text="normal")]


@journal.undoer("fault-test-knob")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sampled: bool = False) -> Path:
    """A file standing for a kernel knob; the fake action writes 'faulted' into it (with
    `sampled`, the run samples the knob while the fault is in effect, as md's rebuild)."""
    path = tmp_path / "knob"
    path.write_text("normal")
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path / "state"))

    def make(fault: FaultSpec, spec: TargetSpec, built: Built, peers: object,
             caps: object = None) -> Action:
        return Action(fault.action, "fault-test-knob", {"path": str(path)},
                      lambda: [Command(path=str(path), text="faulted")], _undo_commands,
                      facts={"knob": "test"},
                      sample=(lambda: {"knob": path.read_text()}) if sampled else None)

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


