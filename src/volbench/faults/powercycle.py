"""One power-cut cycle over a set of stacks: arm, write, cut, take down, power back,
recover, count. The same code serves a run's `power-cut` fault (one stack: the run's
target and what it is built on) and the lab's ground truth (every stack at once).

    cutter = Cutter(power, stacks, ledger_dir)
    cycle = cutter.arm()             # each disk's state now is its base; probes prepared
    cutter.start_probes()            # a forked writer per stack with a probe file
    ... the workload writes ...
    cutter.cut()                     # the moment acknowledgements are counted up to
    outcome = cutter.recover()       # down, released, restored, up, probes and commits read

A stack's `commits` (PostgreSQL) is a callable the caller gives: it reads the rows back
after the recovery and compares them with pgbench's log (workloads/pgbench_ledger.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.faults import powerstack, probe
from volbench.faults.powercut import Power
from volbench.faults.powerstack import Recovery, Stack, Steps
from volbench.system import proc
from volbench.workloads.pgbench_ledger import Commits

CommitsCheck = Callable[[float], Commits]


@dataclass
class StackOutcome:
    """One stack's cut: did it come back, and what of the acknowledged writes did."""

    name: str
    recovery: Recovery
    probe: probe.ProbeResult | None = None
    commits: Commits | None = None
    error: str = ""

    @property
    def lost(self) -> int:
        """Acknowledged writes and commits that did not survive."""
        return ((self.probe.acked_lost if self.probe else 0)
                + (self.commits.lost if self.commits else 0))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "recovery": self.recovery.as_dict(),
                "probe": self.probe.as_dict() if self.probe else None,
                "commits": self.commits.as_dict() if self.commits else None,
                "lost": self.lost, "error": self.error}


@dataclass
class CycleOutcome:
    """What one cycle did, step by step, and each stack's outcome."""

    cycle: int
    armed_at: float
    cut_at: float
    stacks: dict[str, StackOutcome] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    disks: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"cycle": self.cycle, "armed_at": self.armed_at, "cut_at": self.cut_at,
                "written_s": round(self.cut_at - self.armed_at, 3),
                "stacks": {k: v.as_dict() for k, v in self.stacks.items()},
                "steps": self.steps, "disks": self.disks, "seconds": self.seconds,
                "error": self.error}


def new_cycle_id() -> int:
    """A cycle's id, in every probe block and commit row (63 bits: a bigint)."""
    return int.from_bytes(os.urandom(8), "little") >> 1


class Cutter:
    """Cycles of arm / cut / recover over `stacks` (faults.powerstack) on `power`'s disks."""

    def __init__(self, power: Power, stacks: Sequence[Stack], ledger_dir: Path, *,
                 check: bool = True, sync: str = "fdatasync",
                 commits: dict[str, CommitsCheck] | None = None,
                 tracker: proc.ProcessTracker | None = None) -> None:
        self.power, self.stacks, self.ledger_dir = power, list(stacks), ledger_dir
        self.check, self.sync, self.tracker = check, sync, tracker
        self.commits = dict(commits or {})
        self.cycle = 0
        self.probes: dict[str, probe.ProbeSpec] = {}
        self._cut_at: float | None = None
        self._armed_at = 0.0

    def arm(self) -> int:
        """A new cycle: mounts captured, probe files written and synced, every disk's
        state taken as its base. Returns the cycle's id."""
        self.cycle = new_cycle_id()
        self.ledger_dir.mkdir(parents=True, exist_ok=True)
        self.probes = {}
        for stack in self.stacks:
            powerstack.capture(stack)
            stack.processes = []
            if stack.probe_file is not None:
                spec = probe.ProbeSpec(stack.probe_file,
                                       self.ledger_dir / f"probe-{stack.name}-{self.cycle}",
                                       self.cycle, sync=self.sync)
                probe.prepare(spec)
                self.probes[stack.name] = spec
        self.power.arm()
        self._armed_at = time.time()
        self._cut_at = None
        return self.cycle

    def start_probes(self) -> None:
        """A forked writer on each stack with a probe file (it ends on its failed I/O)."""
        for stack in self.stacks:
            spec = self.probes.get(stack.name)
            if spec is not None:
                stack.processes.append(proc.fork_call(partial(probe.write, spec),
                                                      name=f"probe {stack.name}",
                                                      tracker=self.tracker))

    def cut(self) -> float:
        self._cut_at = self.power.cut()
        return self._cut_at

    def recover(self) -> CycleOutcome:
        """After the cut: every stack down, the disks released and restored, every stack
        up (as after a reboot), then the probes and commits read back."""
        assert self._cut_at is not None, "recover() after cut()"
        outcome = CycleOutcome(self.cycle, self._armed_at, self._cut_at)
        steps = Steps()
        timer = time.monotonic()
        try:
            powerstack.down(self.stacks, steps)
            powerstack.wait_released([d for s in self.stacks for d in s.disks], steps)
            outcome.seconds["down_s"] = round(time.monotonic() - timer, 3)
            timer = time.monotonic()
            outcome.disks = self.power.restore()
            outcome.seconds["restore_s"] = round(time.monotonic() - timer, 3)
        except VolbenchError as exc:
            outcome.error = f"the stacks could not be taken down and restored: {exc}"
            outcome.steps = steps.items
            return outcome
        back = time.monotonic()
        recoveries = powerstack.up_all(self.stacks, steps, self.check, back)
        outcome.seconds["up_s"] = round(time.monotonic() - back, 3)
        for stack in self.stacks:
            outcome.stacks[stack.name] = self._count(stack, recoveries[stack.name])
        outcome.steps = steps.items
        return outcome

    def _count(self, stack: Stack, recovery: Recovery) -> StackOutcome:
        found = StackOutcome(stack.name, recovery)
        if not recovery.ok:
            found.error = recovery.error
            return found
        assert self._cut_at is not None
        try:
            spec = self.probes.get(stack.name)
            if spec is not None:
                found.probe = probe.check(spec, self._cut_at)
            if stack.name in self.commits:
                found.commits = self.commits[stack.name](self._cut_at)
        except (VolbenchError, OSError) as exc:
            found.error = f"could not read back: {exc}"
        return found
