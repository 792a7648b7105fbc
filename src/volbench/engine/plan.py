"""Experiment → ordered runs.

Default order is interleaved: round 1 of every case on every target, then round
2, …; within a round, the same case runs on each target back to back, so a
comparison is made between runs close in time (drift hits all layouts alike).
`shuffled` permutes each round with a recorded seed; `sequential` finishes one
target before building the next (fewer devices at once, but drift is confounded
with layout).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from volbench.config.faults import POWER_CUT, FaultSpec
from volbench.config.loadspec import stage
from volbench.core import syncmode
from volbench.core.model import Params, case_key
from volbench.engine.experiment import Experiment
from volbench.targets import KINDS as TARGET_KINDS
from volbench.workloads import KINDS as WORKLOAD_KINDS
from volbench.workloads.base import WorkloadSpec

# Fixed costs per run (cache drop, process start, parsing) and per target build.
RUN_OVERHEAD_S = 0.7
BUILD_S = 3.0
# A power cut's arm, take-down, restore, recovery and read-back, in the emulated lab
# (docs/durability.md: 20-40 s measured per cut of one stack).
CUT_RECOVERY_S = 40.0


def cut_of(spec: WorkloadSpec) -> FaultSpec | None:
    """The workload's power cut, if it has one."""
    return next((f for f in spec.faults if f.action == POWER_CUT), None)


def cut_moment(fault: FaultSpec) -> float:
    """When the cut lands on average (a window's middle)."""
    return (fault.window[0] + fault.window[1]) / 2 if fault.window else fault.at


@dataclass(frozen=True)
class PlannedRun:
    """One run of the plan: a case (target, workload, params) and its repetition; warm-up runs
    are not measured."""

    target: str
    workload: str
    params: Params
    repetition: int
    warmup: bool = False

    @property
    def case_key(self) -> str:
        """The case's stable identity, the same in every repetition and every resume."""
        return case_key(self.target, self.workload, self.params)

    @property
    def run_key(self) -> tuple[str, int, bool]:
        """The run's identity in the store: a resume skips every run whose key is already
        stored."""
        return (self.case_key, self.repetition, self.warmup)


@dataclass(frozen=True)
class Case:
    """One workload's params of the matrix, to be run on every target."""

    workload: str
    params: Params


@dataclass(frozen=True)
class Group:
    """Targets that exist at the same time, in build order, and whose runs happen then."""

    members: tuple[str, ...]
    measured: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Every case, the seed of the order, and the groups of targets that exist together; the
    same seed gives the same order."""

    experiment: Experiment
    cases: tuple[Case, ...]
    seed: int
    # All targets at once (interleaved, shuffled), or one target (with what it is built
    # on) after another (sequential).
    groups: tuple[Group, ...]

    def cuts(self, workload: str) -> int | None:
        """A power-cut workload's own runs per case (its fault's `repeat`), or None."""
        fault = cut_of(self.experiment.workload(workload))
        return int(fault.options["repeat"]) if fault and "repeat" in fault.options else None

    def _counted(self, workload: str, repetition: int, n: int | None) -> bool:
        """Is `repetition` one of this workload's rounds (n: the others' count)?"""
        own = self.cuts(workload)
        limit = own if own is not None else n
        return limit is None or repetition <= limit

    def round(self, repetition: int, *, warmup: bool = False,
              n: int | None = None) -> list[PlannedRun]:
        """All runs of one repetition (or warm-up round), in execution order; with `n`, a
        power-cut workload whose cuts are fewer than `repetition` has none in it."""
        exp = self.experiment
        runs = [PlannedRun(t.name, c.workload, c.params, repetition, warmup)
                for c in self.cases for t in exp.targets
                if warmup or self._counted(c.workload, repetition, n)]
        if exp.order == "shuffled":
            random.Random(f"{self.seed}-{repetition}-{warmup}").shuffle(runs)
            # A load step needs its round's saturation run, a probe the steps before it.
            runs.sort(key=lambda r: stage(r.params))
        return runs

    def runs(self, repetitions: int | None = None) -> list[PlannedRun]:
        """Warm-up rounds then measured rounds 1..repetitions (default: repeat.min)."""
        exp = self.experiment
        n = repetitions if repetitions is not None else exp.repeat.min
        out: list[PlannedRun] = []
        for w in range(1, exp.warmup + 1):
            out += self.round(w, warmup=True)
        # A power cut's `repeat` is its cases' own count, whatever the others run.
        rounds = max([n, *(c for w in exp.workloads if (c := self.cuts(w.name)))])
        for rep in range(1, rounds + 1):
            out += self.round(rep, n=n)
        if exp.order == "sequential":
            order = {t.name: i for i, t in enumerate(exp.targets)}
            out.sort(key=lambda r: order[r.target])  # stable: keeps rounds in order
        return out

    def runs_for(self, group: Group, repetitions: int | None = None) -> list[PlannedRun]:
        """The planned runs of the targets measured in `group`, in the plan's order."""
        return [r for r in self.runs(repetitions) if r.target in group.measured]

    def estimate(self, repetitions: int | None = None) -> float:
        """Seconds the whole plan should take (runs, overheads, builds, layouts)."""
        total = BUILD_S * len(self.experiment.targets)
        return total + sum(self.run_estimate(run) for run in self.runs(repetitions))

    def run_estimate(self, run: PlannedRun) -> float:
        """Seconds one run should take: its tool's estimate and the fixed cost of a run; a
        cut run ends at its cut, then the machine recovers."""
        spec = self.experiment.workload(run.workload)
        seconds = WORKLOAD_KINDS[spec.tool].estimate(spec, run.params)
        cut = cut_of(spec) if not run.warmup else None
        if cut is not None:
            seconds = min(seconds, cut_moment(cut)) + CUT_RECOVERY_S
        return seconds + RUN_OVERHEAD_S

    def loop_devices(self) -> int:
        """Loop devices in use at the same time (the largest group)."""
        exp = self.experiment
        return max((sum(TARGET_KINDS[exp.target(n).type].loop_devices(exp.target(n))
                        for n in g.members) for g in self.groups), default=0)

    def disk_space(self) -> int:
        """Bytes of images the largest group needs at once (groups are built one after another)."""
        exp = self.experiment
        return max((sum(TARGET_KINDS[exp.target(n).type].disk_space(exp.target(n))
                        for n in g.members) for g in self.groups), default=0)


def make_plan(experiment: Experiment, seed: int | None = None) -> Plan:
    """The plan of an experiment: cases from every workload's matrix, ordered by the seed (the
    experiment's, or a new one recorded with the results)."""
    cases = tuple(Case(w.name, params) for w in experiment.workloads
                  for params in WORKLOAD_KINDS[w.tool].cases(w))
    chosen = seed if seed is not None else experiment.seed
    if chosen is None:
        chosen = random.SystemRandom().randrange(2**31)
    order = build_order(experiment)
    if experiment.order == "sequential":
        groups = tuple(Group(tuple(n for n in order if n in closure(experiment, t.name)),
                             (t.name,)) for t in experiment.targets)
    else:
        groups = (Group(tuple(order), tuple(order)),)
    return Plan(experiment, cases, chosen, groups)


def closure(experiment: Experiment, name: str) -> set[str]:
    """A target and everything it is built on, recursively."""
    found, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo += experiment.target(current).on
    return found


def build_order(experiment: Experiment) -> list[str]:
    """Targets in the order they can be built: each after what it is built on.

    Keeps the file's order otherwise (validation has ruled out cycles)."""
    done: list[str] = []
    pending = [t.name for t in experiment.targets]
    while pending:
        ready = next(n for n in pending if all(d in done for d in experiment.target(n).on))
        done.append(ready)
        pending.remove(ready)
    return done


def cut_summary(plan: Plan, repetitions: int | None = None) -> list[str]:
    """How many runs the power cuts cut and how long they take with their recoveries
    (`volbench plan`)."""
    exp = plan.experiment
    out = []
    for spec in exp.workloads:
        fault = cut_of(spec)
        if fault is None:
            continue
        runs = [r for r in plan.runs(repetitions) if r.workload == spec.name and not r.warmup]
        each = sum(min(WORKLOAD_KINDS[spec.tool].estimate(spec, r.params), cut_moment(fault))
                   + CUT_RECOVERY_S for r in runs)
        cases = len({r.case_key for r in runs})
        out.append(f"power cuts of {spec.name}: {len(runs)} run(s) cut "
                   f"({len(runs) // max(1, cases)} per case, on {cases} target-case "
                   f"pair(s)), about {each / 60:.0f} min with their recoveries "
                   f"(~{CUT_RECOVERY_S:g} s each in the lab)")
    return out


def sync_lines(plan: Plan) -> list[str]:
    """The commit-bound cases as `volbench plan` prints them: each workload's sync modes in
    words and what their verdicts judge (core/headline.py)."""
    seen: dict[tuple[str, str], str] = {}
    for case in plan.cases:
        mode = syncmode.of(case.params)
        if mode.syncs:
            # What core/headline.py judges: a commit is its writes and its sync call.
            judged = ("commit latency (writes + sync: p99, mean) and syncs/s; the sync "
                      "call's own latency and write IOPS beside" if mode.calls
                      else "write latency (p99, mean) and IOPS: each write a commit")
            seen.setdefault((case.workload, mode.text), f"{mode.describe()}, judged on {judged}")
    return [f"sync {workload} sync={text}: {words}" for (workload, text), words in seen.items()]
