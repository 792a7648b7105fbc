"""Real-world jobs, timed as real/user/sys with "other" = real − user − sys (seed 003).

Two tools:

- `smallfiles`: the built-in small-file job (no download): a seeded tree of
  source-like files put through git add/commit/modify/gc, copied and deleted,
  each phase timed by the driver `volbench.jobs.smallfiles` (tag phase=…), plus
  phase=total (the sum of the phases).
- `command`: any command of the user's, with optional setup (once per target,
  untimed) and cleanup (after every run, untimed), in a work directory on the
  target. real/user/sys come from the children's resource usage (wait4).

Commands are argv lists. A string is split with shlex and run *without* a shell:
pipes, `&&` and redirections need `["sh", "-c", "…"]`, written out by the user.

"other" is the time the job waited rather than computed: on one CPU mostly I/O
(seed 003 used it as the I/O figure). A job using several CPUs at once can make
user + sys exceed real; "other" then goes negative and says nothing about I/O,
which its note points out.
"""

from __future__ import annotations

import json
import pwd
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from volbench.config.fields import Reader, flag
from volbench.config.spec import Axis, Duration, Field, Integer, Text, TextMap
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Metric, Params, Parsed, Scalar
from volbench.targets.base import Built
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec

RESULTS = "smallfiles.json"
PARALLEL_NOTE = (
    "negative: user + sys exceed real because the job ran on several CPUs at "
    "once, so real − user − sys is not the time spent waiting for I/O"
)


def times(real: float, user: float, sys_: float, tags: Mapping[str, str]) -> list[Metric]:
    """real, user, sys and other = real − user − sys (noted when negative)."""
    other = real - user - sys_
    return [
        Metric("real", real, "s", tags),
        Metric("user", user, "s", tags),
        Metric("sys", sys_, "s", tags),
        Metric("other", other, "s", tags, PARALLEL_NOTE if other < 0 else ""),
    ]


USER = Text("user", "", help="run as this user (it must exist on the machine)")


def read_user(r: Reader) -> str | None:
    """An optional user name to run as; it must exist on this machine."""
    name = r.get(USER) or None
    if name is not None:
        try:
            pwd.getpwnam(name)
        except KeyError:
            r.problem(USER.name, f"no user '{name}' on this machine", "create it or remove user:")
    return name


def _workdir(spec: WorkloadSpec, built: Built) -> str:
    if built.path is None:
        raise VolbenchError(
            f"{spec.tool} needs a filesystem, and target {built.name} is a raw "
            "block device; give the target a filesystem (fs: xfs)"
        )
    return str(built.path / f"volbench-{spec.name}")


# -- smallfiles ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SmallfilesSpec(WorkloadSpec):
    """A small-files job as the experiment file gives it: the fields, read and checked."""

    seed: int = 1


def _files(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000_000:
        raise ValueError(f"expected a number of files, 1 or more, got {value!r}")
    return value


SMALLFILES_AXES: tuple[Axis[Any], ...] = (
    Axis("files", 5000, convert=_files, expected="a number of files",
         value={"type": "integer", "minimum": 1, "maximum": 10_000_000},
         help="files in the generated source tree"),
    Axis("sync", True, convert=flag, expected="true or false",
         help="sync after each step, so the time includes writing to the disk"),
)
SEED = Integer("seed", 1, minimum=0, help="seed of the generated tree (same seed, same files)")


def parse_smallfiles(r: Reader, name: str) -> SmallfilesSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    matrix: dict[str, tuple[Scalar, ...]] = {f.name: r.get(f) for f in SMALLFILES_AXES}
    spec = SmallfilesSpec(name, "smallfiles", matrix, seed=r.get(SEED))
    r.finish()
    return spec


def smallfiles_command(spec: SmallfilesSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    argv = [
        sys.executable,
        "-m",
        "volbench.jobs.smallfiles",
        "--dir",
        _workdir(spec, ctx.built),
        "--files",
        str(params["files"]),
        "--seed",
        str(spec.seed),
        "--out",
        str(ctx.rundir / RESULTS),
    ]
    if not params["sync"]:
        argv.append("--no-sync")
    return Invocation(
        tuple(argv),
        timeout=max(600.0, 20 * smallfiles_estimate(spec, params)),
        cwd=ctx.rundir,
        outputs={RESULTS: ctx.rundir / RESULTS},
    )


def smallfiles_after(spec: SmallfilesSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """Remove what a failed run left (the job's own delete phase removes everything)."""
    if ctx.built.path is None:
        return []
    return [Invocation(("rm", "-rf", _workdir(spec, ctx.built)), timeout=600, throttled=False)]


def smallfiles_estimate(spec: SmallfilesSpec, params: Params) -> float:
    """Expected seconds of one run of these params, for `volbench plan` and the progress ETA;
    reads nothing from the machine."""
    # Seen on 2 cores: 2000 files in ~3 s, mostly git gc.
    return 2.0 + int(params["files"]) * 0.0015


def parse_smallfiles_json(text: str, source: str = RESULTS) -> Parsed:
    """Per-phase real/user/sys/other (tag phase=…), and phase=total as their sum."""
    try:
        data = json.loads(text)
        phases = [
            (str(p["phase"]), float(p["real"]), float(p["user"]), float(p["sys"]))
            for p in data["phases"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError("smallfiles", source, f"not the job's JSON results ({exc})") from exc
    if not phases:
        raise ParseError("smallfiles", source, "no phases recorded")
    metrics: list[Metric] = []
    for name, real, user, sys_ in phases:
        metrics += times(real, user, sys_, {"phase": name})
    metrics += times(
        sum(p[1] for p in phases),
        sum(p[2] for p in phases),
        sum(p[3] for p in phases),
        {"phase": "total"},
    )
    if "bytes_created" in data:
        metrics.append(Metric("bytes", float(data["bytes_created"]), "B", {"phase": "create"}))
    return Parsed(tuple(metrics))


def smallfiles_output(spec: SmallfilesSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    if RESULTS not in run.outputs:
        raise ParseError("smallfiles", "run", "the job wrote no results file")
    return parse_smallfiles_json(run.outputs[RESULTS])


SMALLFILES = WorkloadKind(
    "smallfiles",
    "built-in small-file job: seeded source tree through git, copy, delete",
    parse_smallfiles,
    lambda spec: spec.cases(),
    smallfiles_command,
    smallfiles_output,
    smallfiles_estimate,
    after=smallfiles_after,
    tools=("git",),
    fields=(*SMALLFILES_AXES, SEED),
)


# -- command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandSpec(WorkloadSpec):
    """A user's command workload as the experiment file gives it: the fields, read and checked."""

    command: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    cleanup: tuple[str, ...] = ()
    timeout: float = 3600.0
    expected: float = 60.0
    env: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None


def _argv(r: Reader, key: str, required: bool) -> tuple[str, ...]:
    """A command as an argv list, or a string split with shlex (no shell either way)."""
    if not r.has(key):
        if required:
            r.problem(key, "is required", 'e.g. command: ["make", "-j2"] or "make -j2"')
        return ()
    value = r.raw(key)
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            r.problem(key, f"cannot split {value!r}: {exc}", "check the quotes")
            return ()
    elif (
        isinstance(value, list)
        and all(isinstance(v, str | int | float) for v in value)
        and not any(isinstance(v, bool) for v in value)
    ):
        argv = [str(v) for v in value]
    else:
        r.problem(key, f"expected a command as a list of words or a string, got {value!r}")
        return ()
    if not argv:
        r.problem(key, "is empty", "give the program and its arguments")
        return ()
    if "/" not in argv[0] and shutil.which(argv[0]) is None:
        r.problem(key, f"'{argv[0]}' is not on PATH", "install it or give its full path")
    return tuple(argv)


@dataclass(frozen=True)
class Argv(Field[tuple[str, ...]]):
    """A command: a list of words, or a string split as a shell would (no shell runs it)."""

    what: ClassVar[str] = "command"

    def read(self, r: Reader) -> tuple[str, ...]:
        """The field as an argv list: a list as given, a string split with shlex (no shell
        either way)."""
        return _argv(r, self.name, self.required)

    def values(self) -> dict[str, Any]:
        """A string (split as a shell would) or a non-empty list of words."""
        word = {"type": ["string", "number"]}
        return {"anyOf": [{"type": "string", "minLength": 1},
                          {"type": "array", "items": word, "minItems": 1}]}


COMMAND_ARGV = Argv("command", help="the timed command, run in a directory on the target")
SETUP = Argv("setup", None, help="an untimed command before the first run")
CLEANUP = Argv("cleanup", None, help="an untimed command after every run")
TIMEOUT = Duration("timeout", "1h", positive=True,
                   help="a run that takes longer is stopped and failed")
ESTIMATE = Duration("estimate", "60s", help="expected seconds per run, for plans and progress")
ENV = TextMap("env", None, help="environment variables of the commands")
COMMAND_FIELDS: tuple[Field[Any], ...] = (
    COMMAND_ARGV, SETUP, CLEANUP, TIMEOUT, ESTIMATE, ENV, USER)


def parse_command(r: Reader, name: str) -> CommandSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    env = r.get(ENV)
    for key in [k for k in env if k.startswith("VOLBENCH_")]:
        # $VOLBENCH_DIR is where the command may work (and a cleanup may delete): it
        # always names the directory on the target, never one the file chose.
        r.problem(f"env.{key}", "is set by volbench (the command's directory on the target)",
                  "use another variable name")
    spec = CommandSpec(
        name,
        "command",
        {},
        command=r.get(COMMAND_ARGV),
        setup=r.get(SETUP),
        cleanup=r.get(CLEANUP),
        timeout=r.get(TIMEOUT),
        expected=r.get(ESTIMATE),
        env=env,
        user=read_user(r),
    )
    if spec.timeout <= 0:
        r.problem("timeout", "must be longer than 0 s")
    r.finish()
    return spec


def _invocation(
    spec: CommandSpec, argv: tuple[str, ...], ctx: RunContext, *, throttled: bool = True
) -> Invocation:
    directory = _workdir(spec, ctx.built)
    env = {"VOLBENCH_DIR": directory, "VOLBENCH_TARGET": ctx.built.name, **spec.env}
    return Invocation(
        argv,
        timeout=spec.timeout,
        cwd=Path(directory),
        env=env,
        user=spec.user,
        throttled=throttled,
    )


def command_setup_key(spec: CommandSpec, params: Params) -> str:
    """Cases with equal keys share one untimed setup per target (one laid-out file, one
    initialised database)."""
    return f"command-{spec.name}"


def command_setup(spec: CommandSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """Make the work directory (owned by `user`), then the user's setup, once per target."""
    if ctx.built.path is None:
        return []  # the run records why
    directory = _workdir(spec, ctx.built)
    steps = [_invocation(spec, ("mkdir", "-p", directory), ctx, throttled=False)]
    if spec.setup:
        steps.append(_invocation(spec, spec.setup, ctx, throttled=False))
    return steps


def command_command(spec: CommandSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    _workdir(spec, ctx.built)  # raises for raw devices
    return _invocation(spec, spec.command, ctx)


def command_after(spec: CommandSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """The user's cleanup command after each measured run (untimed, unthrottled), if the spec
    has one."""
    if not spec.cleanup or ctx.built.path is None:
        return []
    return [_invocation(spec, spec.cleanup, ctx, throttled=False)]


def command_output(spec: CommandSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    return Parsed(tuple(times(run.elapsed, run.user_time, run.sys_time, {})))


COMMAND = WorkloadKind(
    "command",
    "your own command (a build, an unpack, …) in a directory on the target, "
    "timed as real/user/sys/other",
    parse_command,
    lambda spec: spec.cases(),
    command_command,
    command_output,
    lambda spec, params: spec.expected,
    setup=command_setup,
    setup_key=command_setup_key,
    after=command_after,
    fields=COMMAND_FIELDS,
)
