"""The lifecycle of an experiment: check, build, set up, run, store, tear down.

Every run is committed to the store the moment it ends, so a crash or Ctrl-C
loses at most the run in progress (recorded as interrupted, and repeated by
--resume). Targets are context managers inside an ExitStack: whatever happens,
they are torn down in reverse order, and the journal lets `volbench cleanup`
finish the job if volbench itself is killed.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from volbench.config.steady import SteadySpec
from volbench.core.errors import (
    Interrupted,
    ResourceError,
    StoreError,
    VolbenchError,
    key_lines,
)
from volbench.core.model import RunResult, Status, canonical_json
from volbench.engine import adaptive, curves, cutrun
from volbench.engine.execution import measure, prepare, prepare_rundir, run_invocation
from volbench.engine.experiment import Experiment
from volbench.engine.faultrun import FaultRun, bind
from volbench.engine.plan import Group, Plan, PlannedRun, closure, make_plan
from volbench.engine.preflight import confinement_problems as confinement_problems
from volbench.engine.preflight import preflight as preflight
from volbench.engine.preflight import program_versions as program_versions
from volbench.engine.preflight import required_tools
from volbench.engine.steadyrounds import unsteady
from volbench.faults.powercut import Power
from volbench.store import location
from volbench.store.db import Store
from volbench.store.location import Location
from volbench.system import containment, journal, proc, sandbox
from volbench.system.block import space
from volbench.system.block.mounts import make_dir, make_tree
from volbench.system.host import fingerprint, hostinfo
from volbench.system.recipe import Recipe
from volbench.targets import BuildContext, Built, open_target, precondition
from volbench.workloads import KINDS as WORKLOAD_KINDS
from volbench.workloads.base import (
    HostFacts,
    Invocation,
    RunContext,
    ServiceContext,
    ServiceHandle,
    WorkloadSpec,
)


class Progress(Protocol):
    """What the runner tells whoever watches (the terminal, a test); called in this order:
    begin, then run_started/run_finished per run (more when adaptive repetition adds
    runs, note at any time), then end, also after an interruption."""

    def begin(self, total: int, estimate_s: float,
              per_run: Callable[[PlannedRun], float] | None = None,
              upto_s: float = 0.0) -> None:
        """The runs planned and their expected seconds, before the first run; `per_run`
        gives one run's planned seconds, `upto_s` what adaptive rounds may add at most."""

    def more(self, runs: int, estimate_s: float = 0.0, upto_s: float | None = None) -> None:
        """Adaptive repetition added `runs` planned at `estimate_s` seconds; `upto_s`: what
        later rounds may still add (0 once every comparison is decided)."""

    def run_started(self, run: PlannedRun) -> None:
        """A run is about to start."""

    def run_finished(self, run: PlannedRun, result: RunResult) -> None:
        """A run ended, whatever its status."""

    def note(self, text: str) -> None:
        """Something worth a line of its own (a skipped target, a stop rule met)."""

    def end(self) -> None:
        """No more runs; called once, also when the experiment was interrupted."""


class NoProgress:
    """A Progress that shows nothing (library use, `--quiet` paths, tests)."""

    def begin(self, total: int, estimate_s: float,
              per_run: Callable[[PlannedRun], float] | None = None,
              upto_s: float = 0.0) -> None:
        """Shows nothing."""

    def more(self, runs: int, estimate_s: float = 0.0, upto_s: float | None = None) -> None:
        """Shows nothing."""

    def run_started(self, run: PlannedRun) -> None:
        """Shows nothing."""

    def run_finished(self, run: PlannedRun, result: RunResult) -> None:
        """Shows nothing."""

    def note(self, text: str) -> None:
        """Shows nothing."""

    def end(self) -> None:
        """Shows nothing."""


@dataclass
class Outcome:
    """What a run of an experiment ended with: where it is stored, how many runs per status, the
    runs skipped as done, notes, and targets that could not be built."""

    experiment_id: int
    db: Location
    counts: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    failed_targets: dict[str, str] = field(default_factory=dict)


@contextmanager
def signals_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP/SIGINT become Interrupted, so every `with` block tears down."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if proc.hold_signal(signum):  # a child is being started: raised once it is recorded
            return
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler)
                for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class Session:
    """One `volbench run`: the store row, the journal, and the per-target state."""

    def __init__(self, exp: Experiment, plan: Plan, store: Store, experiment_id: int,
                 progress: Progress, jrnl: journal.Journal, workdir: Path) -> None:
        self.exp, self.plan, self.store, self.id = exp, plan, store, experiment_id
        self.progress, self.journal, self.workdir = progress, jrnl, workdir
        self.outcome = Outcome(experiment_id, store.path)
        self.setups: dict[tuple[str, str], str | None] = {}  # (target, key) -> error
        # (target, service key) -> the open service, or the error that stopped it.
        self.services: dict[tuple[str, str], ServiceHandle | str] = {}
        self._stack: ExitStack | None = None
        # The targets that exist now (a fault acts on the one it names, with its Built).
        self.built: dict[str, Built] = {}
        # Runs started on each target since it was built (reset when it is built again).
        self.target_runs: dict[str, int] = {}
        self.fingerprints: dict[str, str] = {}  # target -> digest (fingerprint.py)
        self._runs = 0
        # The run's own unprivileged user, when a workload's tool runs sandboxed.
        self.box: sandbox.SandboxUser | None = None
        # Read once, handed to every workload (workloads read no /proc or process state).
        self.host = HostFacts(os.geteuid(), hostinfo.memory_bytes() or None)
        # Load-curve steps' rates, resolved as their saturation runs end (curves.py).
        self.resolver = curves.Resolver(curves.sla_lookup(exp.workloads))
        # Power cuts: the lab disks wrapped once for the experiment (cutrun.py).
        self.power: Power | None = None
        self.redirect: dict[str, str] = {}

    def rundir(self, label: str) -> Path:
        """A run directory path under the work directory that no earlier call returned
        (numbered in order); not created here."""
        self._runs += 1
        return self.workdir / "runs" / f"{self._runs:05d}-{label}"

    def build_group(self, stack: ExitStack, group: Group) -> dict[str, Built]:
        """Build the group's targets in order, each torn down by `stack`; returns the
        ones built. A target that fails (or stands on one that failed) is stored as
        failed with its reason and left out; every target's outcome is stored."""
        built: dict[str, Built] = {}
        for name in group.members:
            spec = self.exp.target(name)
            missing = [d for d in spec.on if d not in built]
            if missing:
                msg = f"it is built on {', '.join(missing)}, which could not be built"
                self.store.save_target(self.id, name, spec.type, "failed", {}, msg)
                self.outcome.failed_targets[name] = msg
                continue
            scope = self.journal.scope()
            recipe = Recipe(tracker=scope)
            ctx = BuildContext(scope, recipe, make_dir(scope, self.workdir / name),
                               {d: built[d] for d in spec.on}, redirect=self.redirect)
            try:
                built[name] = stack.enter_context(open_target(spec, ctx))
            except VolbenchError as exc:
                errors = scope.close()
                msg = str(exc) + (f" (teardown: {'; '.join(errors)})" if errors else "")
                self.store.save_target(self.id, name, spec.type, "failed",
                                       {"recipe": recipe.steps}, msg)
                self.outcome.failed_targets[name] = msg
                self.progress.note(f"target {name} could not be built: {msg}")
                continue
            self.target_runs[name] = 0
            if self.exp.repeat.until == "steady":
                precondition.after_steady_rounds(built[name].info)
            self.store.save_target(self.id, name, spec.type, "built", built[name].info)
        return built

    def service(self, run: PlannedRun, built: Built) -> ServiceHandle | str | None:
        """The run's service (opened on first use, closed with its target group)."""
        spec = self.exp.workload(run.workload)
        kind = WORKLOAD_KINDS[spec.tool]
        if kind.service is None:
            return None
        key = (run.target, kind.service_key(spec, run.params))
        if key not in self.services:
            assert self._stack is not None
            scope = self.journal.scope()
            sctx = ServiceContext(scope, built,
                                  make_dir(scope, self.workdir / f"service-{len(self.services)}"),
                                  self.box.name if self.box is not None else None)
            try:
                self._stack.enter_context(scope)
                self.services[key] = self._stack.enter_context(
                    kind.service(spec, run.params, sctx))
            except VolbenchError as exc:
                self.services[key] = f"service failed: {exc}"
        return self.services[key]

    def ensure_setup(self, run: PlannedRun, ctx: RunContext) -> str | None:
        """Untimed setup shared by cases (fio's data file); returns an error, if any."""
        spec = self.exp.workload(run.workload)
        kind = WORKLOAD_KINDS[spec.tool]
        key = (run.target, kind.setup_key(spec, run.params))
        if key not in self.setups:
            rundir = self.rundir(f"setup-{run.target}")
            try:
                prepare_rundir(rundir, None)
                self.setups[key] = self.run_steps(
                    kind.setup(spec, run.params, replace(ctx, rundir=rundir)), ctx.built,
                    "setup", rundir, kind.working_set(spec, run.params))
            except VolbenchError as exc:
                self.setups[key] = f"setup failed: {exc}"
            finally:
                shutil.rmtree(rundir, ignore_errors=True)
        return self.setups[key]

    def run_steps(self, steps: list[Invocation], built: Built, what: str,
                  rundir: Path | None = None, needed: int | None = None) -> str | None:
        """Run untimed steps in order; the first failure's description, or None.

        A step that ran out of space says so, and what it created on the target goes
        (a partial data file would make every later run there fail too)."""
        try:
            for inv in steps:
                prepare(inv, self.box)
                listed = space.entries(built.path)
                done = run_invocation(inv, built, self.journal, self.box)
                if done.timed_out or done.returncode != 0:
                    tail = " | ".join(key_lines(done.stderr or done.stdout))
                    why = space.explain([done.stderr, done.stdout], directory=built.path,
                                        device=built.block_device,
                                        rundir=rundir or self.workdir, needed=needed,
                                        before=listed)
                    if why:
                        return f"{what} failed: {why} [{tail[:300]}]"
                    return f"{what} failed ({' '.join(inv.argv[:3])} …): {tail}"
        except VolbenchError as exc:
            return f"{what} failed: {exc}"
        return None

    def _failed(self, run: PlannedRun, error: str) -> RunResult:
        now = time.time()
        return RunResult(run.target, run.workload, run.params, run.repetition, Status.FAILED,
                         now, now, run.warmup, error=error)

    def fingerprint(self, built: Built) -> str:
        """The digest of the environment runs on `built` ran in, stored once per target."""
        if built.name not in self.fingerprints:
            env = self.store.experiment(self.id).environment
            tools = env.get("checked", {}).get("tools", {})
            extra = {"lab": json.dumps(env["lab"], sort_keys=True)} if "lab" in env else {}
            found = fingerprint.gather(path=built.path, devices=built.devices,
                                       cgroup=built.cgroup, versions=tools, extra=extra)
            self.fingerprints[built.name] = self.store.save_fingerprint(
                found, fingerprint.digest(found))
        return self.fingerprints[built.name]

    def execute(self, run: PlannedRun, built: Built) -> RunResult:
        """Run one planned run and commit its result before returning, whatever its status;
        an interruption is stored as an interrupted run and raised again. The run
        directory is removed afterwards."""
        self.progress.run_started(run)
        rundir = self.rundir(f"{run.target}-{run.workload}")
        try:
            result = self._execute(run, built, rundir)
        except (Interrupted, KeyboardInterrupt) as exc:
            now = time.time()
            self.store.save_run(self.id, RunResult(
                run.target, run.workload, run.params, run.repetition, Status.INTERRUPTED,
                now, now, run.warmup, error=str(exc) or "interrupted"))
            raise
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        self.store.save_run(self.id, result, fingerprint=self.fingerprint(built))
        counts = self.outcome.counts
        counts[str(result.status)] = counts.get(str(result.status), 0) + 1
        self.progress.run_finished(run, result)
        return result

    def lab_caps(self) -> dict[str, dict[str, int]]:
        """The lab disks' caps by device, in the lab (QEMU enforces them there only)."""
        if self.exp.lab is None or not hostinfo.inside_lab():
            return {}
        return {d["device"]: d["caps"] for d in self.exp.lab.describe()["disks"]}

    def faults_for(self, run: PlannedRun, spec: WorkloadSpec) -> FaultRun | None:
        """The workload's faults on this run's stack (none in warm-up rounds)."""
        bound = bind(spec.faults, self.exp.targets, closure(self.exp, run.target),
                     self.built, self.lab_caps()) if spec.faults and not run.warmup else []
        clock = WORKLOAD_KINDS[spec.tool].fault_clock
        return FaultRun(bound, self.journal.scope(),
                        wait_for_child=clock == "child") if bound else None

    def _execute(self, run: PlannedRun, built: Built, rundir: Path) -> RunResult:
        spec = self.exp.workload(run.workload)
        kind = WORKLOAD_KINDS[spec.tool]
        service = self.service(run, built)
        if isinstance(service, str):
            return self._failed(run, service)
        try:
            load = self.resolver.resolve(run.target, run.workload, run.params, run.repetition,
                                         run.warmup)
        except VolbenchError as exc:
            return self._failed(run, str(exc))
        ctx = RunContext(built, rundir, service.values if service else {}, host=self.host,
                         offered=load.offered if load else None, steady=self.exp.steady)
        setup_error = self.ensure_setup(run, ctx)
        if setup_error:
            return self._failed(run, setup_error)
        # Runs on this build of the target before this one: a fresh target's fifth run is
        # not on a fresh device any more.
        before = self.target_runs.get(run.target, 0)
        self.target_runs[run.target] = before + 1
        extra: dict[str, Any] = {"target_state": {**precondition.run_state(built),
                                                  "runs_before": before}}
        working_set = kind.working_set(spec, run.params)
        if working_set:
            extra["working_set_bytes"] = working_set
        if service is not None and service.info:
            extra["service"] = dict(service.info)
        cut = cutrun.for_run(self, run, spec, built, service, rundir)
        if isinstance(cut, str):
            return self._failed(run, cut)
        result = measure(target=run.target, workload=spec, kind=kind, params=run.params,
                         repetition=run.repetition, warmup=run.warmup, ctx=ctx,
                         tracker=self.journal, drop=self.exp.drop_caches,
                         extra_annotations=extra,
                         faults=None if cut else self.faults_for(run, spec), cut=cut,
                         box=self.box)
        if load is not None:
            result = self.resolver.record(result, load, curves.sla_lookup([spec])(spec.name))
        after_error = self.run_steps(kind.after(spec, run.params, ctx), built, "after-run step")
        if after_error:
            result = replace(result, annotations={**result.annotations, "after": after_error})
        return result

    def run_group(self, group: Group, done: set[tuple[str, int, bool]],
                  repetitions: int, adaptive: bool) -> None:
        """Build the group, run its runs not in `done` (then adaptive rounds, when asked),
        and tear the group's services and targets down, also on an exception."""
        with ExitStack() as stack:
            self._stack = stack
            built = self.built = self.build_group(stack, group)
            self._run_all(self.plan.runs_for(group, repetitions), built, done)
            if adaptive:
                self._adapt(built, done, repetitions)
            self.services.clear()
        self._stack = None

    def _run_all(self, runs: list[PlannedRun], built: dict[str, Built],
                 done: set[tuple[str, int, bool]]) -> None:
        for run in runs:
            if run.target not in built:
                continue
            if run.run_key in done:
                self.outcome.skipped += 1
                continue
            self.execute(run, built[run.target])

    def _adapt(self, built: dict[str, Built], done: set[tuple[str, int, bool]],
               start: int) -> None:
        """Extra interleaved rounds for the target/case pairs not yet decided."""
        exp = self.exp
        if exp.repeat.until == "steady" and exp.steady is not None:
            self._until_steady(built, done, start, exp.steady)
            return
        baseline = exp.baseline or exp.targets[0].name
        design = adaptive.design(exp.repeat.min, exp.repeat.max)
        for repetition in range(start + 1, exp.repeat.max + 1):
            todo = adaptive.pending(self.store.runs([self.id]), baseline, exp.thresholds,
                                    exp.repeat.metrics, design)
            if not todo:
                self.progress.more(0, upto_s=0.0)
                self.progress.note(f"every comparison decided after {repetition - 1} rounds")
                return
            wanted = {(p.target, p.workload, p.params_key) for p in todo}
            wanted |= {(baseline, p.workload, p.params_key) for p in todo}
            runs = [r for r in self.plan.round(repetition) if
                    (r.target, r.workload, canonical_json(dict(r.params))) in wanted]
            self.progress.note(f"round {repetition}: {len(todo)} comparison(s) undecided, "
                               f"{len(runs)} more run(s)")
            self._more(runs, exp.repeat.max - repetition)
            self._run_all(runs, built, done)
        self.progress.more(0, upto_s=0.0)
        if adaptive.pending(self.store.runs([self.id]), baseline, exp.thresholds,
                            exp.repeat.metrics, design):
            self.progress.note(f"some comparisons are still undecided after repeat.max = "
                               f"{exp.repeat.max} rounds; the report says how many runs each "
                               "would need")


    def _more(self, runs: list[PlannedRun], rounds_after: int) -> None:
        """Tell the progress of an adaptive round's runs, and that as many may follow in
        each round still allowed (the worst case: nothing decided until repeat.max)."""
        seconds = sum(self.plan.run_estimate(r) for r in runs)
        self.progress.more(len(runs), seconds, upto_s=seconds * max(0, rounds_after))

    def _until_steady(self, built: dict[str, Built], done: set[tuple[str, int, bool]],
                      start: int, spec: SteadySpec) -> None:
        """Extra rounds for each target's cases until the SNIA rule holds (steadyrounds)."""
        for repetition in range(start + 1, self.exp.repeat.max + 1):
            todo = unsteady(self.store.runs([self.id]), spec)
            if not todo:
                self.progress.more(0, upto_s=0.0)
                self.progress.note(f"every case steady after {repetition - 1} rounds")
                return
            wanted = {(p.target, p.workload, p.params_key) for p in todo}
            runs = [r for r in self.plan.round(repetition) if
                    (r.target, r.workload, canonical_json(dict(r.params))) in wanted]
            self.progress.note(f"round {repetition}: {len(todo)} case(s) not steady yet, "
                               f"{len(runs)} more run(s)")
            self._more(runs, self.exp.repeat.max - repetition)
            self._run_all(runs, built, done)
        self.progress.more(0, upto_s=0.0)
        if unsteady(self.store.runs([self.id]), spec):
            self.progress.note(f"some cases are still not steady after repeat.max = "
                               f"{self.exp.repeat.max} rounds; the report names them")


def run_experiment(exp: Experiment, *, db: Location, resume: bool = False,
                   repetitions: int | None = None, progress: Progress | None = None,
                   retry_failed: bool = False, take_over: bool = False) -> Outcome:
    """Run a whole experiment into the database at `db`; returns what happened.

    With `resume`, the latest experiment with this spec continues (runs not yet
    finished; with `retry_failed` also runs that failed or timed out). The experiment is
    claimed for as long as this runs (claims.py): a second writer is refused."""
    progress = progress or NoProgress()
    with Store(db) as store:
        experiment_id, plan, resumed = _open_experiment(exp, store, resume, take_over, progress)
        try:
            return _claimed_run(exp, plan, store, experiment_id, progress, repetitions,
                                retry_failed and resumed)
        finally:
            store.release(experiment_id)


def _open_experiment(exp: Experiment, store: Store, resume: bool, take_over: bool,
                     progress: Progress) -> tuple[int, Plan, bool]:
    """(experiment id, plan, resumed?): the experiment to resume, claimed, or a new one.

    With --resume, the look for an experiment to resume and the creation of a new one
    happen under one lock, so two runs started together never make two experiments."""
    for _ in range(2):
        previous = store.find_resumable(exp.spec_hash) if resume else None
        plan = make_plan(exp, seed=previous.seed if previous else None)
        versions = preflight(exp, plan)
        if previous is not None:
            note = store.claim(previous.id, take_over=take_over)
            if note:
                progress.note(note)
            return previous.id, plan, True
        env = hostinfo.capture(required_tools(exp), versions)
        # The command line is kept with the results; a --db URL's password is not.
        env["argv"] = [location.redact(arg) for arg in env.get("argv", [])]
        if exp.lab is not None and hostinfo.inside_lab():
            # The disks' caps and flush mode are part of what was measured, and the
            # document only holds the classes the file spelled out, not the defaults.
            env["lab"] = exp.lab.describe()
        args = (exp.name, exp.spec_hash, exp.document, env, plan.seed)
        if not resume:
            return store.begin_experiment(*args, claim=True, series=exp.series), plan, False
        new = store.begin_if_new(*args, series=exp.series)
        if new is not None:
            progress.note("nothing to resume for this experiment file: starting afresh")
            return new, plan, False
    raise StoreError(f"the experiment to resume in {store.path} changed twice while "
                     "starting; run the command again")


def _make_workdir(exp: Experiment, scope: journal.Scope, experiment_id: int) -> Path:
    """This run's own directory (outputs of every run go under it), or why not."""
    try:
        exp.workdir.mkdir(parents=True, exist_ok=True)
        workdir = make_dir(scope, exp.workdir / f"{exp.name}-{experiment_id}-{os.getpid()}")
        make_tree(scope, workdir / "runs")
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise ResourceError(space.output_full(exp.workdir)) from exc
        raise ResourceError(f"cannot make the work directory under {exp.workdir}: "
                            f"{exc.strerror}; set workdir: to a writable directory") from exc
    return workdir


def _claimed_run(exp: Experiment, plan: Plan, store: Store, experiment_id: int,
                 progress: Progress, repetitions: int | None, retry_failed: bool) -> Outcome:
    # Read only once claimed: another writer's runs are all stored by then.
    done = store.finished_keys(experiment_id, retry_failed=retry_failed)
    store.set_status(experiment_id, "running")
    n = repetitions if repetitions is not None else exp.repeat.min
    todo = [r for r in plan.runs(n) if r.run_key not in done]
    # Adaptive repetition may add up to repeat.max rounds: at most a round's runs each.
    upto = 0.0
    if exp.repeat.adaptive and repetitions is None:
        upto = sum(plan.run_estimate(r) for r in plan.round(n + 1)) * (exp.repeat.max - n)
    progress.begin(len(todo), sum(plan.run_estimate(r) for r in todo), plan.run_estimate, upto)
    status = "failed"
    interruption: Interrupted | None = None
    with signals_raise(), journal.opened(f"experiment {exp.name}") as jrnl:
        scope = jrnl.scope()
        try:
            containment.begin(scope)  # every process of the run, ended at teardown
            workdir = _make_workdir(exp, scope, experiment_id)
            session = Session(exp, plan, store, experiment_id, progress, jrnl, workdir)
            cutrun.wrap_disks(session, scope)
            if any(WORKLOAD_KINDS[w.tool].sandboxed for w in exp.workloads):
                session.box = sandbox.create(scope)  # removed when the scope closes
            if done:  # resumed: load-curve steps resolve from the saturation runs stored
                session.resolver = curves.Resolver(curves.sla_lookup(exp.workloads),
                                                   store.runs([experiment_id]))
            adapt = exp.repeat.adaptive and repetitions is None
            for group in plan.groups:
                session.run_group(group, done, n, adapt)
            status = "done"
        except (Interrupted, KeyboardInterrupt) as exc:
            status = "interrupted"
            interruption = exc if isinstance(exc, Interrupted) else None
            raise
        finally:
            scope.close()
            store.set_status(experiment_id, status)
            progress.end()
            # Every scope's leftovers, also those closed while an exception was in flight.
            if jrnl.incomplete and interruption is not None:
                interruption.left_behind(jrnl.incomplete)
            elif jrnl.incomplete:
                progress.note(journal.incomplete_message(jrnl.incomplete))
    return session.outcome
