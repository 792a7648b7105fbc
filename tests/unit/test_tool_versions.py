"""The tools' versions of an experiment's environment are asked all at once (issue 33:
the harness's start-up under load): each is a process start, and none waits for another."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import NoReturn

from bounds import within
from volbench.system import proc
from volbench.system.host import hostinfo

TOOLS = ["dd", "fio", "git", "mkfs.xfs"]


class SlowTools:
    """Answers `TOOL --version` after 0.3 s, counting how many are asked at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.calls: list[float] = []  # each answer's own wall seconds

    def run(self, argv: tuple[str, ...], cwd: Path | None, input: str | None
            ) -> proc.Completed:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        started = time.monotonic()
        time.sleep(0.3)
        with self.lock:
            self.now -= 1
            self.calls.append(time.monotonic() - started)
        name = Path(argv[0]).name
        return proc.Completed(argv, 0, f"{name} version 1.{len(name)}\n", "", 0.0, 0.3, 0, 0)

    def start(self, argv: tuple[str, ...], log: Path) -> NoReturn:
        raise AssertionError("nothing is started in the background")


def test_tool_versions_are_asked_at_once() -> None:
    """All asked at once (the most in flight is all of them), and the whole takes less
    than 3/4 of the answers' own seconds added up (what one after another would take):
    paired, since a busy host stretches the answers' sleeps and the whole alike. Measured:
    0.25-0.26 quiet, 0.34-0.45 niced beside a 2-core hog (load 10-12)."""
    fake = SlowTools()
    with proc.executor(fake):
        started = time.monotonic()
        found = hostinfo.tool_versions(TOOLS)
        took = time.monotonic() - started
    assert found == {name: f"{name} version 1.{len(name)}" for name in TOOLS}
    assert fake.most == len(TOOLS)
    serial = sum(fake.calls)
    within("tool versions: wall / the answers' seconds added up", took / serial, high=0.75,
           reference=f"{len(fake.calls)} answers, {serial:.2f} s in all")
