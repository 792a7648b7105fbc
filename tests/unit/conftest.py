"""tests/unit starts no process: every command volbench would run through system/proc.py
goes to a fake executor (tests/fakeexec.py) that answers from captured real outputs, and
fails the test for anything it has no capture of."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakeexec import Replay
from volbench.system import proc


@pytest.fixture(autouse=True)
def replay() -> Iterator[Replay]:
    """The unit test's executor; add captures with `replay.add(Capture(...))`."""
    with proc.executor(Replay()) as fake:
        assert isinstance(fake, Replay)
        yield fake
