"""Fixtures the system tests share."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import leftovers

# Where ramdir mounts its tmpfs: beside the workdir fixture's directories, not under /dev
# (volbench refuses a workdir in a system directory).
RAM_BASE = Path("/var/tmp/volbench-tests")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process to stand in for another volbench (its PID and start time)."""
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


@pytest.fixture
def ramdir() -> Iterator[Path]:
    """A work directory in RAM (a tmpfs of its own), for tests whose ground truth is a
    throttle's cap.

    A loop disk's image on the shared host disk answers as that disk does at the moment:
    it stalled 0.1-0.6 s in about 7 % of 2-s windows while others worked on this machine
    (measured 2026-11-28: a 1000-IOPS cap read 691-972), which no bound on a capped rate
    can absorb. In RAM the unthrottled loop disk does tens of thousands of IOPS at any
    time, so a cap of a few hundred or a thousand is the only limit. tmpfs has O_DIRECT
    since Linux 6.6 (this machine's kind runs 6.18): the loop disks keep direct I/O, which
    the runner checks (docs/testing.md).
    """
    path = RAM_BASE / f"ram-{uuid.uuid4().hex[:12]}"
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g,mode=0755", "volbench-ram",
                    str(path)], check=True, timeout=30)
    try:
        probe = path / "odirect"
        try:
            os.close(os.open(probe, os.O_CREAT | os.O_RDWR | os.O_DIRECT))
        except OSError as exc:
            raise AssertionError(f"tmpfs has no O_DIRECT here ({exc.strerror}): the "
                                 "capped-rate tests need Linux 6.6 or later") from exc
        probe.unlink()
        yield path
        leaks = leftovers(path)
    finally:
        subprocess.run(["umount", str(path)], check=False, timeout=60)
        shutil.rmtree(path, ignore_errors=True)
    assert not leaks, f"test left resources behind: {leaks}"
