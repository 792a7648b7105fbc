"""Timing ground truths: a measured time or rate checked against its bound, and recorded.

Every assertion of tests/system and tests/lab on a quantity the machine's speed can move
(a rate under a throttle, a latency, a stall's length, a rebuild's time) goes through
`within`. It asserts, with a message that names the check, the value, the bound and the
reference it was measured against; with VOLBENCH_TEST_BOUNDS=FILE it also appends one JSON
line per check to FILE, so bench/test_bounds.py can run the timing tests on a quiet host
and beside a CPU hog and tabulate each check's spread against its bound (the figures in the
tests' docstrings come from there).

A check is either paired (its bound is relative to a reference measured at the same moment
under the same CPU conditions: the hop against loopback, a capped disk against its cap as
the unthrottled side delivered it) or physical (a lower bound no load can break, such as a
delay that cannot be shorter than the delay set, or a cap far below what the machine
delivers unthrottled, which the docstring states). The host's load and steal are added to
every failed test's report by tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

ENV = "VOLBENCH_TEST_BOUNDS"


def within(check: str, value: float, low: float | None = None, high: float | None = None,
           *, reference: str = "") -> None:
    """Assert low < value < high (either side may be open) and record it."""
    inside = (low is None or value > low) and (high is None or value < high)
    _record(check, value, low, high, reference, inside)
    low_text = "" if low is None else f"{low:.6g} < "
    high_text = "" if high is None else f" < {high:.6g}"
    ref = f" (reference: {reference})" if reference else ""
    assert inside, f"{check}: {low_text}{value:.6g}{high_text} does not hold{ref}"


def _record(check: str, value: float, low: float | None, high: float | None,
            reference: str, inside: bool) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    line = {"check": check, "value": value, "low": low, "high": high, "ok": inside,
            "reference": reference, "at": time.time()}
    with Path(path).open("a") as out:
        out.write(json.dumps(line) + "\n")


class CpuTimed:
    """The CPU seconds of this process (all its threads) and the wall seconds over a block.

    A bound on work done in-process (parsing, planning, segmenting) is put on its CPU
    seconds: the time other processes and the hypervisor take from it (a niced test beside
    a 2-core hog gets ~10 % of a core) is in the wall seconds only, which the check gives
    as its reference."""

    cpu = wall = 0.0

    def __enter__(self) -> CpuTimed:
        self._cpu, self._wall = time.process_time(), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu = time.process_time() - self._cpu
        self.wall = time.monotonic() - self._wall

    def within(self, check: str, high: float) -> None:
        """Assert the block's CPU seconds < high, recorded beside the wall seconds."""
        within(check, self.cpu, high=high,
               reference=f"CPU seconds of this process; wall {self.wall:.3f} s")
