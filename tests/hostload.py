"""The host's load and CPU steal while the tests run (issue 35).

A timing ground truth that fails on a busy machine must say how busy the machine was, so
a reader knows whether the bound or the machine was at fault. A daemon thread samples
/proc/stat and /proc/loadavg every SAMPLE_S seconds for the whole pytest session (one read
of two small files: nothing a test measures notices it). `describe(start, end)` sums up a
window of wall-clock time: the 1-minute load average (median and highest), the busy share
of all cores and the steal share (time the hypervisor gave to other machines), the mean and
the worst sample.

tests/conftest.py adds that line to the report of every failed test (for a test that reads
the shared lab boot: the windows of the steps it reads, from the guest's steps.json) and
prints the session's figures at the end of the run.
"""

from __future__ import annotations

import itertools
import os
import statistics
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.system.host.activity import Snapshot, snapshot

SAMPLE_S = 2.0


@dataclass(frozen=True)
class Window:
    """A window's figures (shares are of all cores: 1.0 = every core)."""

    seconds: float
    samples: int
    load_median: float | None
    load_max: float | None
    busy: float
    steal: float
    steal_worst: float

    def text(self) -> str:
        load = ("load ?" if self.load_median is None
                else f"load {self.load_median:.1f} (max {self.load_max:.1f})")
        return (f"{load}, busy {self.busy:.0%} of {os.cpu_count() or 1} cores, steal "
                f"{self.steal:.0%} (worst {SAMPLE_S:.0f} s: {self.steal_worst:.0%}) over "
                f"{self.seconds:.0f} s")


class Recorder:
    """Snapshots every SAMPLE_S seconds in a daemon thread, kept in memory."""

    def __init__(self) -> None:
        self.samples: list[Snapshot] = [snapshot()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hostload", daemon=True)

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=SAMPLE_S * 2)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.samples.append(snapshot())

    def window(self, start: float, end: float) -> Window | None:
        """The figures between two time.time() values (None: fewer than two samples)."""
        samples = list(self.samples)
        inside = [s for s in samples if start - SAMPLE_S <= s.at <= end + SAMPLE_S]
        if end + SAMPLE_S > time.time():  # a window that ends now: end it with a fresh read
            inside.append(snapshot())
        return summarise(inside)

    def describe(self, start: float, end: float) -> str:
        found = self.window(start, end)
        return "host: no samples in that window" if found is None else "host: " + found.text()


def summarise(samples: list[Snapshot]) -> Window | None:
    """Busy and steal shares between consecutive snapshots, and their load averages."""
    if len(samples) < 2:
        return None
    shares = []
    for a, b in itertools.pairwise(samples):
        total = b.total_ticks - a.total_ticks
        if total > 0:
            shares.append(((b.busy_ticks - a.busy_ticks) / total,
                           (b.steal_ticks - a.steal_ticks) / total))
    first, last = samples[0], samples[-1]
    total = max(last.total_ticks - first.total_ticks, 1)
    loads = [s.load1 for s in samples if s.load1 is not None]
    return Window(
        seconds=last.at - first.at,
        samples=len(samples),
        load_median=statistics.median(loads) if loads else None,
        load_max=max(loads) if loads else None,
        busy=(last.busy_ticks - first.busy_ticks) / total,
        steal=(last.steal_ticks - first.steal_ticks) / total,
        steal_worst=max((steal for _, steal in shares), default=0.0),
    )


RECORDER: Recorder | None = None
# Windows measured elsewhere that a test file's assertions are about, by file name: the
# shared lab boot's steps run long before the tests that read them (tests/lab/conftest.py).
WINDOWS: dict[str, list[tuple[str, float, float]]] = {}


def start() -> Recorder:
    """The session's recorder (started once)."""
    global RECORDER
    if RECORDER is None:
        RECORDER = Recorder().start()
    return RECORDER


def add_window(files: Iterable[str], label: str, start: float, end: float) -> None:
    """Say that the tests in these files judge what was measured between start and end."""
    for name in files:
        WINDOWS.setdefault(name, []).append((label, start, end))


def for_test(item: Any, call: Any) -> str:
    """The host's figures while the test ran, and during the windows it judges."""
    assert RECORDER is not None
    lines = [f"while the test ran: {RECORDER.describe(call.start, call.stop)}"]
    for label, start, end in WINDOWS.get(Path(str(item.path)).name, []):
        lines.append(f"during {label}: {RECORDER.describe(start, end)}")
    return "\n".join(lines)


def session_line() -> str:
    """The whole session's figures, for the end of the run."""
    assert RECORDER is not None
    found = summarise([*RECORDER.samples, snapshot()])
    return ("host during this pytest: " + found.text()) if found else "host: no samples"


def now() -> float:
    return time.time()
