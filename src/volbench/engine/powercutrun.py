"""A power cut in a measured run: the run's stack is cut at its moment and recovered,
and the run stores what the cut lost beside its speed (docs/durability.md).

    cut = PowerCutRun(...)                 # per measured run of a power-cut workload
    inv = cut.measured(inv)                # fio goes on past EIO; pgbench keeps a ledger
    with cut:                              # armed: base kept, the probe writing
        done = run(inv, tracker=cut.tap(tracker))   # cut at `at`, recovered, counted
    metrics, annotations = cut.metrics(), cut.recorded()

The cut lands `at` seconds after the tool's start (fio: its first job process, as
faults do). The tool is then stopped: fio by SIGTERM (it writes its results), pgbench
by its server's end (it writes its transaction log as it exits: a SIGTERM would lose
what its stdio buffer held). The recovery runs in the schedule's thread while the
main thread waits for the tool; leaving the `with` waits for the count.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import VolbenchError
from volbench.core.model import Metric
from volbench.engine.faultrun import Tap, has_child
from volbench.faults.powercut import Power
from volbench.faults.powercycle import CommitsCheck, Cutter, CycleOutcome
from volbench.faults.powerstack import Stack
from volbench.system import proc, procfs
from volbench.workloads import pgbench_ledger as ledger
from volbench.workloads.base import Invocation

START_WAIT_S = 60.0
JOIN_TIMEOUT_S = 900.0
TERM_GRACE_S = 20.0
LEDGER_SCRIPT = "volbench-ledger.sql"
TAG = {"fault": "power-cut"}


def moment(fault: FaultSpec, seed: int, key: str) -> float:
    """When this run is cut: the fault's time, or a draw in its window seeded by the
    plan's seed and the run's identity (the same on a resume)."""
    if fault.window is None:
        return fault.at
    return random.Random(f"{seed}-{key}").uniform(*fault.window)


class _Tool:
    """The measured process as the recovery sees it: poll() and stop()."""

    name = "workload"

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = procfs.start_ticks(pid)

    def poll(self) -> int | None:
        return None if procfs.running(self.pid, self.start) else 0

    def stop(self, grace: float = 0.0) -> int:
        procfs.signal_group(self.pid, signal.SIGKILL)
        return 0


class PowerCutRun:
    """One run's cut (module doc)."""

    def __init__(self, fault: FaultSpec, at: float, stack: Stack, power: Power,
                 ledger_dir: Path, tool: str, commits: CommitsCheck | None = None,
                 tracker: proc.ProcessTracker | None = None) -> None:
        self.fault, self.at, self.stack, self.tool = fault, at, stack, tool
        self.cutter = Cutter(power, [stack], ledger_dir,
                             check=bool(fault.options.get("fsck", 1)),
                             commits={stack.name: commits} if commits else None,
                             tracker=tracker)
        self.outcome: CycleOutcome | None = None
        self.error = ""
        self.cut_s: float | None = None
        self.cycle = 0
        self.zero_wall = 0.0
        self._pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._schedule, name="volbench-power-cut",
                                        daemon=True)

    # -- before the run ------------------------------------------------------------------
    def measured(self, inv: Invocation, rundir: Path) -> Invocation:
        """The tool's command for a cut run: fio goes on past the cut's EIO (it is then
        stopped and writes its results); pgbench runs the ledger's script."""
        argv = list(inv.argv)
        if self.tool == "fio":
            return replace(inv, argv=(*argv, "--continue_on_error=all"))
        if self.tool != "pgbench" or "-b" not in argv:
            return inv
        at = argv.index("-b")
        script = rundir / LEDGER_SCRIPT
        argv[at:at + 2] = ["-f", str(script), *ledger.defines(self.cycle)]
        return replace(inv, argv=tuple(argv), files={**inv.files, script: ledger.script(
            inv.argv[at + 1])})

    def arm(self) -> None:
        """The cycle begins: base kept, probe prepared (before the tool's command is made:
        pgbench's ledger names the cycle)."""
        self.cycle = self.cutter.arm()

    def tap(self, tracker: proc.ProcessTracker | None) -> proc.ProcessTracker:
        """A tracker passing everything on to `tracker`, noting the tool's PID (the one
        the cut stops, and whose first child starts fio's clock)."""
        return Tap(self._note_pid, tracker)

    def _note_pid(self, pid: int) -> None:
        self._pid = pid

    def __enter__(self) -> PowerCutRun:
        self.cutter.start_probes()
        self.zero_wall = time.time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self.cut_s is None:
            self._stop.set()  # interrupted before the cut: no cut
        self._thread.join(JOIN_TIMEOUT_S)
        if self._thread.is_alive():
            self.error = f"the cut's recovery did not end within {JOIN_TIMEOUT_S:g} s"

    # -- the schedule ----------------------------------------------------------------------
    def _zero(self) -> float:
        began = time.monotonic()
        while not self._stop.is_set() and time.monotonic() - began < START_WAIT_S:
            if self._pid is not None and (self.tool != "fio" or has_child(self._pid)):
                break
            self._stop.wait(0.02)
        self.zero_wall = time.time()
        return time.monotonic()

    def _schedule(self) -> None:
        zero = self._zero()
        if self._stop.wait(max(0.0, self.at - (time.monotonic() - zero))):
            return
        try:
            self.cutter.cut()
            self.cut_s = round(time.monotonic() - zero, 3)
            if self._pid is not None:
                tool = _Tool(self._pid)
                if self.tool != "pgbench":  # pgbench ends with its server (module doc)
                    procfs.signal_group(self._pid, signal.SIGTERM)
                self.stack.processes.append(tool)
            self.outcome = self.cutter.recover()
        except (VolbenchError, OSError) as exc:
            self.error = str(exc)

    # -- the result ------------------------------------------------------------------------
    def ended_by_cut(self) -> bool:
        """Did the cut end the tool (its exit code then says nothing about the run)?"""
        return self.cut_s is not None

    def recorded(self) -> dict[str, Any]:
        """The run's `power_cut` annotation: when (asked, done), the cycle, every step of
        the take-down and recovery, the host's restore per disk, the counts."""
        found: dict[str, Any] = {"at_s": round(self.at, 3), "cut_s": self.cut_s,
                                 "window_s": list(self.fault.window) if self.fault.window
                                 else None, "cycle": self.cycle, "error": self.error,
                                 "stack": self.stack.name, "disks": self.stack.disks}
        if self.outcome is not None:
            found["outcome"] = self.outcome.as_dict()
        return found

    def metrics(self) -> list[Metric]:
        """The durability figures of this cut (none when there was no cut)."""
        if self.outcome is None:
            return []
        found = self.outcome.stacks.get(self.stack.name)
        if found is None:
            return [Metric("recovered", 0.0, "", dict(TAG), self.outcome.error)]
        out = [Metric("recovered", float(found.recovery.ok), "", dict(TAG), found.error)]
        if found.recovery.seconds is not None:
            out.append(Metric("recovery_seconds", found.recovery.seconds, "s", dict(TAG)))
        if found.probe is not None:
            out += [Metric("acked_writes", float(found.probe.acked), "", dict(TAG)),
                    Metric("acked_lost", float(found.probe.acked_lost), "", dict(TAG)),
                    Metric("torn_blocks", float(found.probe.torn), "", dict(TAG))]
        if found.commits is not None:
            out += [Metric("commits_acked", float(found.commits.acked), "tx", dict(TAG)),
                    Metric("commits_lost", float(found.commits.lost), "tx", dict(TAG))]
        checks = found.recovery.checks
        if checks:
            out.append(Metric("fsck_problems", float(sum(not c["clean"] for c in checks)), "",
                              dict(TAG)))
        return out


def ledger_dir(root: Path, label: str) -> Path:
    """Where a run's ledgers go: outside the stack (in the lab, the folder the host shares)."""
    return root / f"{label}-{os.getpid()}"
