"""The unit tests' fake executor (tests/fakeexec.py) at the one place tools start
(system/proc.py): captured real outputs come back through volbench's own code, a
captured failure still fails, and any command without a capture fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakeexec import Capture, NoProcessInUnitTests, Replay
from volbench.core.errors import CommandFailed
from volbench.system import proc
from volbench.system.block.mounts import mount_info


def test_a_captured_output_is_replayed_through_volbench_code(replay: Replay) -> None:
    replay.add(Capture("findmnt", "findmnt/mount-json", ("--json",)))
    info = mount_info(Path("/tmp/capture-disk/mnt"))
    assert info["target"] == "/tmp/capture-disk/mnt" and info["fstype"] == "xfs"
    assert replay.calls == [("findmnt", "--json", "--target", "/tmp/capture-disk/mnt")]


def test_a_captured_failure_fails_as_the_real_one_would(replay: Replay) -> None:
    replay.add(Capture("findmnt", "findmnt/not-mounted"))
    with pytest.raises(CommandFailed) as failed:
        proc.run(["findmnt", "--json", "/nowhere"], timeout=5)
    assert failed.value.returncode == 1
    assert mount_info(Path("/nowhere")) == {}


def test_a_command_without_a_capture_fails_the_test() -> None:
    with pytest.raises(NoProcessInUnitTests, match=r"no capture answers `fio --version`.*"
                       r"tests/system"):
        proc.run(["fio", "--version"], timeout=5)
    with pytest.raises(NoProcessInUnitTests, match="starts no server"):
        proc.start(["postgres", "-D", "x"], log=Path("/nonexistent/log"))
