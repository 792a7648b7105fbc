"""What every workload module provides. Workloads build argv and parse output; they never run.

A workload spec holds a *matrix*: each axis is a parameter with one or more
values; its cases are the cross product. The runner starts every process.

A workload that needs a server (pgbench needs PostgreSQL) names a *service*: a
context manager from `volbench.services` that the runner opens once per target
(and service key) before the first run that needs it, journaled and torn down
like any target resource. The service yields a `ServiceHandle` whose values
(socket directory, port, …) reach `setup`/`command` through `RunContext.service`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.config.fields import Reader
from volbench.config.pathcheck import Place
from volbench.config.spec import Field
from volbench.config.steady import SteadySpec
from volbench.core.errors import ParseError, Problem
from volbench.core.model import Params, Parsed, Scalar
from volbench.services.crashhooks import CrashHooks
from volbench.system.journal import Scope
from volbench.targets.base import Built


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload as the experiment file gives it: its name, tool and the matrix of values to
    run."""

    name: str
    tool: str
    # Axis name -> its values, in the order the user wrote them.
    matrix: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)
    # Faults fired into its runs (docs/faults.md); read by the engine for every tool.
    faults: tuple[FaultSpec, ...] = ()

    def cases(self) -> list[dict[str, Scalar]]:
        """Every combination of the matrix's values (its product), in the order the user wrote
        them."""
        keys = list(self.matrix)
        combos = itertools.product(*(self.matrix[k] for k in keys))
        return [dict(zip(keys, combo, strict=True)) for combo in combos]


@dataclass(frozen=True)
class HostFacts:
    """What a workload may know about the machine a run happens on. The engine reads them
    (workloads read no /proc, sysfs or process state); None where not known, e.g. for
    `volbench plan` or for outputs imported from another machine."""

    euid: int | None = None
    memory_bytes: int | None = None


@dataclass(frozen=True)
class RunContext:
    """Where a run happens: the built target, a scratch directory, the service's values."""

    built: Built
    rundir: Path
    service: Mapping[str, str] = field(default_factory=dict)
    host: HostFacts = HostFacts()
    # A load-curve step's offered rate (op/s or tx/s in all), resolved by the runner once
    # the round's saturation run has ended (volbench.engine.curves); None: unthrottled.
    offered: float | None = None
    # The experiment's `steady:` rule; a workload that can hold it within a run (fio, with
    # `within: run`) passes it to its tool.
    steady: SteadySpec | None = None


@dataclass(frozen=True)
class Invocation:
    """One process to run: everything the runner needs, nothing it must guess."""

    argv: tuple[str, ...]
    timeout: float
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # Files the tool writes that hold results (name -> path), read after it exits.
    outputs: Mapping[str, Path] = field(default_factory=dict)
    # Globs of extra files (logs) to keep, relative to `cwd`.
    output_globs: tuple[str, ...] = ()
    user: str | None = None
    # Join the target's cgroup (throttled disk class)? Setup steps may not want to.
    throttled: bool = True
    # Files the tool reads (job files: path -> text), written by the engine before it
    # starts the process, outside the timed part; workloads write nothing themselves.
    files: Mapping[Path, str] = field(default_factory=dict)
    # All of the tool's data I/O bypasses the page cache (O_DIRECT on volbench's own data
    # file): dropping the caches before it changes nothing it measures, so the run only
    # syncs (drop_caches costs 90-380 ms a run here, docs/architecture.md, Harness).
    uncached: bool = False
    # Runs as the run's own unprivileged user in a sandbox that can write only `cwd` and
    # `writable` (system/sandbox.py): for tools that need no root and read the user's
    # code (pgbench's scripts). The runner refuses to start it outside one.
    sandboxed: bool = False
    writable: tuple[Path, ...] = ()
    # Checks each of `files` again from the copy the tool will read, right before it
    # starts (path, text -> what is wrong, or None): pgbench's scripts.
    check: Callable[[Path, str], str | None] | None = None


@dataclass(frozen=True)
class RunOutput:
    """Everything a parser may read about one finished run."""

    outputs: Mapping[str, str]
    # Wall-clock seconds of the process, and its (and its children's) CPU seconds.
    elapsed: float = 0.0
    user_time: float = 0.0
    sys_time: float = 0.0
    exit_code: int = 0
    host: HostFacts = HostFacts()


@dataclass(frozen=True)
class ServiceHandle:
    """A running service as runs see it: how to reach it, and what to record with each run."""

    # Values workloads need to reach the service (e.g. {"host": "/sock", "port": "5499"}).
    values: Mapping[str, str]
    # Settings and facts to record with every run that used it.
    info: Mapping[str, Any] = field(default_factory=dict)
    # How a power cut ends its server and starts it again (None: it cannot be cut).
    crash_hooks: CrashHooks | None = None


@dataclass(frozen=True)
class ServiceContext:
    """What a service opener is handed: the journal scope for all it starts, the built target, a
    private directory."""

    scope: Scope
    built: Built
    # A private directory (outside the target) for sockets, logs and the like.
    workdir: Path
    # The run's sandbox user (system/sandbox.py), whom a server must let its clients be.
    sandbox_user: str | None = None


ServiceOpener = Callable[[Any, Params, ServiceContext], AbstractContextManager[ServiceHandle]]


def _no_setup(spec: Any, params: Params, ctx: RunContext) -> list[Invocation]:
    return []


def _whole_spec(spec: Any, params: Params) -> str:
    return str(getattr(spec, "name", ""))


@dataclass(frozen=True)
class WorkloadKind:
    """One workload tool as the engine sees it: parse, cases, command, parser, estimate, and the
    untimed setup, after-steps and service it may need."""

    name: str
    summary: str
    parse: Callable[[Reader, str], WorkloadSpec]
    # The cases of a spec (the matrix's product, minus combinations that mean nothing).
    cases: Callable[[Any], list[dict[str, Scalar]]]
    command: Callable[[Any, Params, RunContext], Invocation]
    parse_output: Callable[[Any, Params, RunOutput], Parsed]
    # Expected seconds per run (for plan estimates and the progress bar ETA).
    estimate: Callable[[Any, Params], float]
    # Untimed setup before the first measured run of a case (e.g. laying out fio's file).
    # Cases with the same setup key share one setup per target.
    setup: Callable[[Any, Params, RunContext], list[Invocation]] = _no_setup
    setup_key: Callable[[Any, Params], str] = _whole_spec
    # Untimed steps after every measured run (e.g. a user job's cleanup command).
    after: Callable[[Any, Params, RunContext], list[Invocation]] = _no_setup
    service: ServiceOpener | None = None
    service_key: Callable[[Any, Params], str] = _whole_spec
    tools: tuple[str, ...] = ()
    needs_root: bool = False
    # Parse the output even when the tool exits non-zero (a multi-host fio run where one
    # server died): whatever the parser can read is kept with the failed run.
    partial_results: bool = False
    # Working set in bytes for a case (compared with RAM), if the workload knows it.
    working_set: Callable[[Any, Params], int | None] = lambda spec, params: None
    # Workloads that take paths from the user (fio's options and job files): what would
    # reach outside the place a run may touch (pathcheck; checked before any run).
    confinement: Callable[[Any, Params, Place], list[Problem]] | None = None
    # Programs found per spec rather than on PATH (PostgreSQL's): checked before anything
    # is touched (raising an error that says how to install them); returns their versions
    # for the checked environment, which `volbench compare` warns about.
    programs: Callable[[Any], dict[str, str]] | None = None
    # The kind's own fields, declared once (config/spec.py): read by `parse`, listed by the
    # docs test against docs/workloads/.
    fields: tuple[Field[Any], ...] = ()
    # Its tool runs in the sandbox as the run's own user (Invocation.sandboxed): the run
    # makes that user before the first run.
    sandboxed: bool = False
    # Faults (docs/faults.md): where the schedule's zero is ("child": the measured
    # process's first child, fio's job process; "start": the process's start), how long a
    # case's measured run is when the file says (seconds; None: not known before it
    # runs), and why a spec cannot take faults at all (None: it can).
    fault_clock: str = "start"
    run_seconds: Callable[[Any, Params], float | None] = lambda spec, params: None
    fault_problem: Callable[[Any], str | None] = lambda spec: None


class LostHosts(ParseError):
    """Some hosts of a multi-host run gave no (complete) results; the others' are `partial`."""

    def __init__(self, tool: str, what: str, lost: Mapping[str, str], parsed: Parsed) -> None:
        self.lost = dict(lost)
        self.partial = parsed
        named = "; ".join(f"host {h}: {why}" for h, why in lost.items())
        super().__init__(
            tool, what, f"{named} (the other hosts ran; their numbers stay with this failed run)"
        )
