"""Faults fired on a schedule beside one measured run, and the run's phases measured.

`FaultRun` wraps the measured process: a thread fires each fault at its time (seconds
from just before the process starts), journals the action before its commands run,
samples what an action watches (md rebuild progress) each second, and ends every fault
still in effect when the process ends or is interrupted. Events (time asked, started,
done, the commands and their output) go to the run's annotations under `faults`.
`phase_metrics` then cuts the run's per-second series at the events (stats.phases).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from volbench.config.faults import ENDING, POWER_CUT, UNDONE_BY, FaultSpec
from volbench.config.fields import Reader
from volbench.core.errors import VolbenchError
from volbench.faults import COMMANDS, make_action, md
from volbench.faults.base import Action, Done, run_commands
from volbench.faults.check import concerned
from volbench.system import proc
from volbench.system.journal import Entry, Scope
from volbench.targets.base import Built, TargetSpec
from volbench.workloads.base import WorkloadKind, WorkloadSpec

# The phase a fault's end opens, by the fault it ends: md's restore is a phase of its own
# (the rebuild runs); the end of any other fault (nfsd back, a disk's caps back, an iSCSI
# path back) opens `after`.
PHASE_AFTER = {"fail": "restore"}
SAMPLE_EVERY_S = 1.0
JOIN_TIMEOUT_S = 150.0
# How long the schedule waits for the measured process's first child, and how often
# it looks (a job without children starts its schedule then).
START_WAIT_S = 60.0
START_POLL_S = 0.02


@dataclass(frozen=True)
class Bound:
    """A fault of the workload with the target it acts on, as built for this run."""

    index: int  # its position in the workload's faults:
    fault: FaultSpec
    spec: TargetSpec
    built: Built
    # Every target built now (an NFS server another target of the experiment started).
    peers: Mapping[str, Built] = field(default_factory=dict)
    # The lab disks' caps by device (in the lab): what a rebuild's length is predicted from.
    caps: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One timed step of a run's schedule: a fault's start, or the end of the fault in
    effect on the same device or target (an ending action, or `for:` running out)."""

    at: float
    bound: Bound
    ends: bool  # True: ends the fault in effect on the same thing

    @property
    def fault(self) -> FaultSpec:
        """The experiment file's fault this step carries out (as validated when read)."""
        return self.bound.fault


@dataclass
class _Active:
    action: Action
    entry: Entry


def schedule(faults: Sequence[Bound]) -> list[Step]:
    """The timed steps of a run's faults: each start, each ending action, and the end of
    each fault with `for:`, in time order (an end before a start at the same time)."""
    steps: list[Step] = []
    for bound in faults:
        fault = bound.fault
        steps.append(Step(fault.at, bound, fault.action in ENDING))
        if fault.duration is not None:
            steps.append(Step(fault.at + fault.duration, bound, True))
    return sorted(steps, key=lambda s: (s.at, not s.ends))


@dataclass
class FaultRun:
    """Context manager around a measured process; `events` holds what happened."""

    faults: Sequence[Bound]
    scope: Scope
    # Time zero: the measured process's first child (see tap) rather than its start.
    wait_for_child: bool = False
    clock: Callable[[], float] = time.monotonic
    events: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pid: int | None = None
        # Wall-clock time of the schedule's zero (for moving events onto the tool's clock).
        self.zero_wall = 0.0
        self.waited_s = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._active: dict[tuple[str | None, str | None], _Active] = {}
        self._samplers: list[Callable[[], dict[str, Any]]] = []
        self._rebuilding: set[Callable[[], dict[str, Any]]] = set()  # saw a rebuild run
        self._thread = threading.Thread(target=self._loop, name="volbench-faults", daemon=True)
        self._t0 = 0.0
        self._todo: list[Step] = schedule(self.faults)

    def now(self) -> float:
        """Seconds since the schedule's zero (the process start until the zero is known)."""
        return self.clock() - self._t0

    def __enter__(self) -> FaultRun:
        self._t0 = self.clock()
        self.zero_wall = time.time()
        self._thread.start()
        return self

    def tap(self, tracker: proc.ProcessTracker | None) -> proc.ProcessTracker:
        """A tracker passing everything on to `tracker`, noting the measured process's
        PID: the schedule's zero waits for that process's first child (fio's job process,
        forked as its I/O starts; fio's own start-up took 9 s in the loaded lab VM)."""
        return Tap(self._note_pid, tracker)

    def _note_pid(self, pid: int) -> None:
        self._pid = pid

    def _wait_for_start(self) -> None:
        """Until the measured process has a child (at most START_WAIT_S), then time zero."""
        began = self.clock()
        while self.wait_for_child and not self._stop.is_set() and \
                self.clock() - began < START_WAIT_S:
            if self._pid is not None and _has_child(self._pid):
                break
            self._stop.wait(START_POLL_S)
        self.waited_s = self.clock() - self._t0
        self._t0 = self.clock()
        self.zero_wall = time.time()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)
        with self._lock:
            self._not_fired()
            ended = list(self._active)
            for key in ended:
                self._end(key, None, self.now(), at_teardown=True)
            if ended and self._samplers:
                # The state an undo left, also when it came at teardown (a thin pool freed
                # after the run's end must still show up freed in the record).
                self._sample()
        # Anything left (a step cut short, md's speed limits) is undone by its undoer.
        errors = self.scope.close()
        if errors:
            self.events.append({"action": "teardown", "phase": "teardown", "commands": [],
                                "error": "; ".join(errors), "asked_s": None,
                                "started_s": round(self.now(), 3),
                                "done_s": round(self.now(), 3)})

    @property
    def unfired(self) -> list[dict[str, Any]]:
        """The events of steps that never fired because the run ended first."""
        return [e for e in self.events if e.get("phase") == "not fired"]

    def _not_fired(self) -> None:
        """Steps the run ended before: said, not left out (a run that was to show a
        fault and did not is no faulted run). The end of a fault (`for:` running past
        the run) is no step of its own: teardown ends the fault."""
        ended = self.now()
        for step in self._todo:
            if step.ends and step.fault.action not in ENDING:
                continue
            event = self._event(step, step.at, "not fired", step.fault.action)
            event["error"] = (f"not fired: the run ended {ended:.1f} s into its schedule, "
                              f"before this step's time ({step.at:g} s)")
            self.events.append(event)
        self._todo = []

    # -- the thread ---------------------------------------------------------------------
    def _loop(self) -> None:
        self._wait_for_start()
        todo = self._todo
        next_sample = SAMPLE_EVERY_S
        while todo or self._samplers:
            due = min(todo[0].at if todo else float("inf"), next_sample)
            if self._stop.wait(max(0.0, due - self.now())):
                return
            if todo and todo[0].at <= self.now():
                step = todo.pop(0)
                with self._lock:
                    self._fire(step)
            if self.now() >= next_sample:
                self._sample()
                next_sample = self.now() + SAMPLE_EVERY_S

    def _sample(self) -> None:
        for sampler in list(self._samplers):
            taken = sampler()
            self.samples.append({"t": round(self.now(), 3), **taken})
            if "rebuild" not in taken:
                continue
            # No rebuild before one was seen is "not started yet", not "finished": md
            # starts the recovery after `mdadm --add` returns, and in a loaded VM the
            # first sample (4 ms after) found none, which ended the sampling and lost
            # the rebuild's progress (the CI run of 2026-11-28).
            if taken["rebuild"] is not None:
                self._rebuilding.add(sampler)
            elif sampler in self._rebuilding:
                self._samplers.remove(sampler)  # the rebuild it saw has finished

    def _fire(self, step: Step) -> None:
        key = (step.fault.device, step.fault.target)
        asked = step.at
        if step.ends:
            active = self._active.get(key)
            started = active.action.name if active is not None else step.fault.action
            self._end(key, step, asked, phase=PHASE_AFTER.get(started, "after"))
            return
        event = self._event(step, asked, step.fault.action)
        try:
            action = make_action(step.fault, step.bound.spec, step.bound.built,
                                 step.bound.peers, caps=step.bound.caps)
            event["facts"] = action.facts
            event["may_lose"] = action.may_lose  # the verify pass is judged against it
            for kind, data in action.keep:  # undone when the run's scope closes
                self.scope.add(kind, **data)
            entry = self.scope.add(action.journal_kind, **action.data)  # before it acts
            self._active[key] = _Active(action, entry)
            event["commands"] = _shown(run_commands(action.apply_commands()))
            if action.sample is not None:
                self._samplers.append(action.sample)
        except (VolbenchError, OSError) as exc:  # recorded; the run goes on without it
            event["error"] = str(exc)
        event["done_s"] = round(self.now(), 3)
        self.events.append(event)
        if event["error"] and key in self._active:  # refused half way: undone now, and
            self._end(key, None, self.now(), at_teardown=True)  # its end opens no phase

    def _end(self, key: tuple[str | None, str | None], step: Step | None, asked: float,
             phase: str = "after", at_teardown: bool = False) -> None:
        active = self._active.pop(key, None)
        if active is None:
            return
        name = UNDONE_BY.get(active.action.name, "end")
        event = self._event(step, asked, phase if not at_teardown else "teardown", name)
        event["fault"] = event.get("fault", active.action.name)
        try:
            event["commands"] = _shown(run_commands(
                active.action.undo_commands(active.entry.data)))
            self.scope.forget(active.entry)
        except (VolbenchError, OSError) as exc:
            event["error"] = str(exc)  # the entry stays: the scope's close tries again
        if active.action.name == "fail" and step is not None and not at_teardown:
            self._samplers.append(md.restore_sampler(step.bound.built))
        event["done_s"] = round(self.now(), 3)
        self.events.append(event)

    def _event(self, step: Step | None, asked: float, phase: str,
               action: str | None = None) -> dict[str, Any]:
        event: dict[str, Any] = {"asked_s": round(asked, 3), "started_s": round(self.now(), 3),
                                 "phase": phase, "commands": [], "error": None}
        if step is not None:
            event.update(index=step.bound.index, action=action or step.fault.action,
                         on=step.fault.device or step.fault.target)
        else:
            event["action"] = action or "end"
        return event


class Tap:
    """A tracker passing everything on to `inner`, telling `note` the first PID it sees
    (the measured process's: a schedule's clock and what a power cut stops)."""

    def __init__(self, note: Callable[[int], None], inner: proc.ProcessTracker | None) -> None:
        self.note, self.inner, self.seen = note, inner, False

    def process_started(self, pid: int, argv: Sequence[str]) -> object:
        """Passed on; the first PID is noted."""
        if not self.seen:
            self.seen = True
            self.note(pid)
        return self.inner.process_started(pid, argv) if self.inner else None

    def process_ended(self, token: object) -> None:
        """Passed on."""
        if self.inner is not None:
            self.inner.process_ended(token)


def has_child(pid: int) -> bool:
    """Has the process forked a child yet (fio's job process: its I/O is starting)?"""
    return _has_child(pid)


def _has_child(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return True  # no such file (an older kernel) or the process is gone: start now


def _shown(done: Sequence[Done]) -> list[dict[str, Any]]:
    return [d.as_dict() for d in done]


def recorded(run: FaultRun, process_started: float | None = None) -> dict[str, Any]:
    """What the run's annotations keep: events, samples (rebuild progress) and how long
    after the measured process's start (`process_started`, wall clock) the schedule's
    zero came. The run is entered before the process starts, so a zero counted from
    the entry (the fallback when the process never started) is later than that by the
    steps in between: 8 ms on a busy host, enough to break a bound on fio's offset."""
    zero = run.waited_s if process_started is None else run.zero_wall - process_started
    return {"events": run.events, "samples": run.samples, "zero_after_s": round(zero, 3)}


def bind(faults: Sequence[FaultSpec], targets: Sequence[TargetSpec], run_on: set[str],
         built: Mapping[str, Built], caps: Mapping[str, Mapping[str, int]] | None = None
         ) -> list[Bound]:
    """The faults that fire into a run on a target whose stack is `run_on` (the target and
    what it is built on, transitively): those acting on one of them, with its Built
    (and `caps`, the lab disks' caps by device, when the run is in the lab)."""
    out = []
    for index, fault in enumerate(faults):
        spec = concerned(fault, targets)
        if spec is not None and spec.name in run_on and spec.name in built:
            out.append(Bound(index, fault, spec, built[spec.name], dict(built),
                             dict(caps or {})))
    return out


def plan_lines(workloads: Sequence[WorkloadSpec], targets: Sequence[TargetSpec],
               on: Callable[[str], set[str]]) -> list[str]:
    """The fault schedule as `volbench plan` prints it: per workload, the runs it fires
    into (targets whose stack `on(name)` holds the faulted one) and each step's commands."""
    lines = []
    for workload in workloads:
        for fault in workload.faults:
            if fault.action == POWER_CUT:
                lines.append(f"fault {workload.name} {fault.describe()} -> every measured run "
                             f"of it, on {', '.join(t.name for t in targets)}: "
                             f"{COMMANDS[POWER_CUT]}")
                continue
            spec = concerned(fault, targets)
            runs = [t.name for t in targets if spec is not None and spec.name in on(t.name)]
            lines.append(f"fault {workload.name} {fault.describe()} -> runs on "
                         f"{', '.join(runs) or '(none)'}: {COMMANDS.get(fault.action, '')}")
            if fault.duration is not None:
                ending = UNDONE_BY[fault.action]
                lines.append(f"fault {workload.name} at {fault.at + fault.duration:g} s: "
                             f"{ending} {fault.names}: {COMMANDS.get(ending, '')}")
    return lines


def fault_times(r: Reader, spec: WorkloadSpec, kind: WorkloadKind) -> None:
    """Faults fire inside a run: one scheduled at or after the end of the workload's
    shortest run would never fire (it used to be accepted and silently do nothing)."""
    why = kind.fault_problem(spec)
    if why is not None:
        r.problem("faults", why)
        return
    known = [s for case in kind.cases(spec) if (s := kind.run_seconds(spec, case)) is not None]
    if not known:
        return  # checked when the run ends: a step it never reached fails the run
    shortest = min(known)
    for i, fault in enumerate(spec.faults):
        if fault.at >= shortest:
            r.problem(f"faults[{i}].at", f"{fault.at:g} s is at or after the end of the "
                      f"run ({shortest:g} s{' for its shortest case' if len(known) > 1 else ''})"
                      "; it would never fire",
                      "schedule it inside the run, or make the run longer")
