"""Fixtures the system tests share."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process to stand in for another volbench (its PID and start time)."""
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()
