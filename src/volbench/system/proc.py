"""The one place that starts processes.

Habits enforced here: argv lists only (never a shell); every call has a
timeout; the exit code decides failure, never stderr; output goes to files (no
pipe deadlocks, no size limit) and comes back decoded; each child leads its own
process group so a timeout or Ctrl-C ends the whole tree; children get
PR_SET_PDEATHSIG so that even a SIGKILLed volbench does not leave its direct
children running; the children's resource usage (user/sys CPU) is collected
with wait4 for the real/user/sys figures of macro jobs.

Process groups and the parent-death signal do not reach a descendant that calls
setsid() (fio's job workers, PostgreSQL's backends, daemons): during a run every
child therefore joins the run's cgroup (see containment.py) before it execs, and
carries a per-command tag in its environment; when a command is killed (timeout,
interruption) or a server stopped, the members of the cgroup with its tag end too, and
the run's teardown (or `volbench cleanup`) ends whatever is still in the cgroup.
"""

from __future__ import annotations

import ctypes
import grp
import itertools
import os
import pwd
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn, Protocol

from volbench.core.errors import CommandFailed, CommandTimeout
from volbench.system import procfs

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
# Grace between SIGTERM and SIGKILL when ending a process group.
KILL_GRACE = 5.0
# Environment entry that marks every process one command starts (descendants inherit it).
COMMAND_TAG = "VOLBENCH_COMMAND"
_commands = itertools.count(1)
# While a child is being started (> 0), a signal handler that would raise holds the
# signal back instead (hold_signal); it is raised again once the child is recorded.
_starting = 0
_held: list[int] = []


@dataclass(frozen=True)
class _Containment:
    cgroup: Path  # cgroup v1 directory every child joins unless it names its own
    hierarchy: str  # the v1 controller that hierarchy is mounted for ("blkio")
    relative: str  # its path inside that hierarchy, as /proc/PID/cgroup shows it


_containment: _Containment | None = None


def containment() -> Path | None:
    """The cgroup children join by default now (None outside a contained run)."""
    return _containment.cgroup if _containment is not None else None


def set_containment(cgroup: Path | None, hierarchy: str = "", relative: str = "") -> None:
    """Start (or, with None, stop) putting every child into `cgroup` (or a cgroup below
    it). Process-wide on purpose: targets, services and daemons start processes deep in
    their own code, and one of them left out would be one that can escape."""
    global _containment
    _containment = _Containment(cgroup, hierarchy, relative) if cgroup is not None else None


class ProcessTracker(Protocol):
    """Records started processes (the journal) so `volbench cleanup` can end them."""

    def process_started(self, pid: int, argv: Sequence[str]) -> object: ...

    def process_ended(self, token: object) -> None: ...


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    started: float
    ended: float
    user_time: float
    sys_time: float
    timed_out: bool = False

    @property
    def elapsed(self) -> float:
        return self.ended - self.started


class Executor(Protocol):
    """Stands in for real processes (the unit tests' replay of captured outputs, in the
    way of hyperfine's mock executor): what run() would have returned for argv, and what
    start() does for a background server (a fake refuses: servers are system tests)."""

    def run(self, argv: tuple[str, ...], cwd: Path | None, input: str | None) -> Completed: ...

    def start(self, argv: tuple[str, ...], log: Path) -> NoReturn: ...


_executor: Executor | None = None


@contextmanager
def executor(fake: Executor) -> Iterator[Executor]:
    """Within the block run() and start() ask `fake` instead of starting processes."""
    global _executor
    before, _executor = _executor, fake
    try:
        yield fake
    finally:
        _executor = before


def command_line(argv: Sequence[str]) -> str:
    """How a command is shown in recipes and errors (copy-pasteable)."""
    return shlex.join(argv)


# Never passed on to children: the team store's URL (VOLBENCH_DB may carry a password)
# and every libpq variable (PG*: PGPASSWORD, PGPASSFILE, PGSERVICEFILE, PGHOST, and
# PGOPTIONS, whose `-c session_preload_libraries=…` would load a library into the
# backend of volbench's own psql, which connects as the superuser). A `command`
# workload's `env` output or a tool's message cannot show a password, and every
# PostgreSQL program volbench starts connects exactly where its argv says (a command
# workload that wants a libpq variable sets it in its `env:`).
SECRET_ENV = ("VOLBENCH_DB",)


def _passed_on(key: str) -> bool:
    return key not in SECRET_ENV and not key.startswith("PG")


def base_env(extra: Mapping[str, str] | None = None, inherit: bool = True) -> dict[str, str]:
    """The environment for children: C locale so tools print parseable numbers; volbench's
    own environment (less its secrets) unless `inherit` is False (sandboxed tools)."""
    env = {k: v for k, v in os.environ.items() if _passed_on(k)} if inherit else {}
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    if extra:
        env.update(extra)
    return env


@dataclass(frozen=True)
class _Identity:
    user: int | None = None
    group: int | None = None
    extra_groups: list[int] | None = None


def _identity(user: str | None) -> _Identity:
    """uid, gid and supplementary groups to run as (the child switches in _preexec)."""
    if user is None:
        return _Identity()
    entry = pwd.getpwnam(user)
    groups = [g.gr_gid for g in grp.getgrall() if user in g.gr_mem]
    return _Identity(entry.pw_uid, entry.pw_gid, groups)


def _preexec(cgroup_join: str | None, who: _Identity) -> Callable[[], None]:
    # Runs in the child between fork and exec: only simple system calls, no Python-level
    # locks. The cgroup is joined *before* dropping to another user (only root may move a
    # process into a cgroup), which is why volbench switches user here and not through
    # Popen's user= (CPython applies that before preexec_fn runs).
    payload = b"0"  # writing 0 moves the writing thread itself (see _join_file)

    def setup() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cgroup_join is not None:
            fd = os.open(cgroup_join, os.O_WRONLY)
            try:
                os.write(fd, payload)
            finally:
                os.close(fd)
        if who.user is not None and who.group is not None:
            os.setgroups(who.extra_groups or [])
            os.setgid(who.group)
            os.setuid(who.user)
            # Dropping privileges clears the parent-death signal: set it again.
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return setup


def _kill_group(pgid: int, reap: Callable[[], object] | None = None) -> None:
    procfs.kill_group(pgid, KILL_GRACE, reap)


def hold_signal(signum: int) -> bool:
    """For a signal handler that raises (runner.signals_raise): True when a child is being
    started right now and the signal was held back; it is raised again once the child
    is recorded, where the code that ends it is ready.

    Raised inside Popen (after the fork, before it returns), an interruption would leave
    a child that no one waits for, kills or journals. A flag rather than a signal mask:
    the mask is per thread, and another thread can take the signal."""
    if _starting > 0:
        _held.append(signum)
        return True
    return False


class _Hold:
    """Signals held back from creation until `release` (idempotent).

    Only in the main thread: Python runs signal handlers there, so an interruption can
    only land inside a Popen of the main thread (and the counter needs no lock)."""

    def __init__(self) -> None:
        global _starting
        self.on = threading.current_thread() is threading.main_thread()
        if self.on:
            _starting += 1

    def release(self) -> None:
        global _starting
        if not self.on:
            return
        self.on = False
        _starting -= 1
        if _starting == 0 and _held:
            signum = _held[0]
            _held.clear()
            signal.raise_signal(signum)  # its handler runs now, inside the caller's try


def _new_tag() -> str:
    return f"{os.getpid()}.{next(_commands)}"


def end_tagged(tag: str) -> list[int]:
    """End what is left of one command: its descendants that left its process group
    (setsid) but still carry its tag. Looked for in the run's cgroup only — everything
    a run starts is in there; outside a contained run, among all processes."""
    c = _containment
    candidates = procfs.cgroup_pids(c.cgroup) if c is not None else list(procfs.pids())
    entry = f"{COMMAND_TAG}={tag}"
    mine = [(pid, st.start) for pid in candidates
            if pid != os.getpid() and procfs.environ_has(pid, entry)
            and (st := procfs.stat(pid)) is not None and not st.zombie]
    return procfs.end_processes(mine, grace=1.0) if mine else []


class _Waiter(threading.Thread):
    """Blocks in wait4 so the main thread can wait with a timeout and stay interruptible."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.status: int | None = None
        self.rusage: object = None

    def run(self) -> None:
        _, self.status, self.rusage = os.wait4(self.pid, 0)


def _wait(popen: subprocess.Popen[bytes], timeout: float) -> tuple[int, float, float, bool]:
    """Wait for the child: (returncode, user, sys, timed_out). Kills the group on any exception."""
    waiter = _Waiter(popen.pid)
    waiter.start()
    timed_out = False
    try:
        waiter.join(timeout)
        if waiter.is_alive():
            timed_out = True
            _kill_group(popen.pid)
            waiter.join()
    except BaseException:
        _kill_group(popen.pid)
        waiter.join()
        raise
    finally:
        # Descendants that outlived the leader (daemonised helpers) are ours too.
        if waiter.status is not None:
            _kill_group_quietly(popen.pid)
    assert waiter.status is not None
    code = os.waitstatus_to_exitcode(waiter.status)
    popen.returncode = code  # tell Popen the child is reaped
    ru = waiter.rusage
    return code, getattr(ru, "ru_utime", 0.0), getattr(ru, "ru_stime", 0.0), timed_out


def _kill_group_quietly(pgid: int) -> None:
    procfs.signal_group(pgid, signal.SIGKILL)


def _contents(f: IO[bytes]) -> str:
    f.seek(0)
    return f.read().decode("utf-8", errors="replace")


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    user: str | None = None,
    cgroup: Path | None = None,
    input: str | None = None,
    check: bool = True,
    tracker: ProcessTracker | None = None,
    hint: str = "",
    keep_group: bool = False,
    inherit_env: bool = True,
) -> Completed:
    """Run argv to completion.

    With `check` (the default) a non-zero exit raises CommandFailed and a timeout
    CommandTimeout; without it the caller inspects `returncode` and `timed_out`.

    `cgroup` is a cgroup directory the child joins before exec (blkio throttling).
    `keep_group=True` leaves descendants running after the leader exits: only for
    commands that start daemons on purpose (pg_ctl start), which must be tracked separately.
    `inherit_env=False`: the child sees only `env` (and the C locale, the command tag).
    """
    argv = [str(a) for a in argv]
    if _executor is not None:
        return _checked(_executor.run(tuple(argv), None if cwd is None else Path(cwd), input),
                        timeout, check, hint)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as stdin:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        started = time.time()
        tag = _new_tag()
        hold = _Hold()
        try:
            popen = subprocess.Popen(
                argv, stdin=stdin, stdout=out, stderr=err, cwd=cwd,
                env=base_env({**(env or {}), COMMAND_TAG: tag}, inherit_env),
                start_new_session=True, preexec_fn=_preexec(_join_file(cgroup), _identity(user)),
            )
        except BaseException:
            hold.release()
            raise
        token: object = None
        killed = True
        try:
            token = tracker.process_started(popen.pid, argv) if tracker else None
            # An interruption held back while starting arrives here, with the child
            # recorded and inside this try, which ends it.
            hold.release()
            if keep_group:
                code, utime, stime, timed_out = _wait_leader_only(popen, timeout)
            else:
                code, utime, stime, timed_out = _wait(popen, timeout)
            killed = timed_out
        except BaseException:
            hold.release()
            _kill_group(popen.pid, popen.poll)
            raise
        finally:
            # A killed command's setsid'd descendants (fio's workers) would run on: end
            # them now. After a normal exit, what a tool left on purpose (dmeventd after
            # lvcreate) stays until the run's teardown empties the run's cgroup.
            if killed and not keep_group:
                end_tagged(tag)
            if tracker is not None and not keep_group:
                tracker.process_ended(token)
        ended = time.time()
        result = Completed(tuple(argv), code, _contents(out), _contents(err), started, ended,
                           utime, stime, timed_out)
    return _checked(result, timeout, check, hint)


def _checked(result: Completed, timeout: float, check: bool, hint: str) -> Completed:
    if result.timed_out and check:
        raise CommandTimeout(result.argv, timeout, result.stderr)
    if check and result.returncode != 0:
        raise CommandFailed(result.argv, result.returncode, result.stderr or result.stdout, hint)
    return result


def _join_file(cgroup: Path | None) -> str | None:
    """The file a child writes itself into, of its own cgroup (a throttled disk class,
    itself inside the run's cgroup) or else the run's.

    `tasks`, not `cgroup.procs`: between fork and exec the child has one thread, so moving
    that thread moves the whole process, and the threads and children it makes later are
    born inside. Moving a whole thread group takes the kernel's global
    cgroup_threadgroup_rwsem for writing (and may wait for an RCU grace period); moving
    the writer's own single thread does not (kernel/cgroup, cgroup_procs_write_start):
    measured in a forked child on this busy host, 200 joins, median 0.06 ms either way
    but a slowest join of 13 ms through cgroup.procs against 0.6 ms through tasks."""
    where = cgroup if cgroup is not None else containment()
    return str(where / "tasks") if where is not None else None


def _wait_leader_only(popen: subprocess.Popen[bytes], timeout: float
                      ) -> tuple[int, float, float, bool]:
    try:
        code = popen.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_group(popen.pid)
        popen.wait()
        return popen.returncode, 0.0, 0.0, True
    except BaseException:
        _kill_group(popen.pid)
        raise
    return code, 0.0, 0.0, False


@dataclass
class Background:
    """A long-running child (a server) that the caller stops explicitly."""

    argv: tuple[str, ...]
    popen: subprocess.Popen[bytes]
    log: Path
    tracker: ProcessTracker | None
    token: object
    tag: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def poll(self) -> int | None:
        return self.popen.poll()

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> int:
        """End the whole process group; returns the exit code."""
        if self.popen.poll() is None:
            _kill_group(self.popen.pid, self.popen.poll)
        code = self.popen.wait()
        _kill_group_quietly(self.popen.pid)
        if self.tag:
            end_tagged(self.tag)
        if self.tracker is not None:
            self.tracker.process_ended(self.token)
        return code


class _Spawner:
    """Forks background processes from one thread that lasts as long as volbench.

    The kernel sends the parent-death signal (PR_SET_PDEATHSIG) when the *thread* that
    forked the child ends, not the process: a server started from a short-lived worker
    thread (a stack brought back after a power cut, faults/powerstack.py) was SIGKILLed
    as soon as that thread finished (seen in the lab: PostgreSQL answered its first query
    after recovery, then refused every connection)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: list[tuple[Callable[[], object], dict[str, object], threading.Event]] = []
        self.ready = threading.Condition(self.lock)
        self.thread: threading.Thread | None = None

    def call(self, make: Callable[[], object]) -> object:
        box: dict[str, object] = {}
        done = threading.Event()
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._serve, name="volbench-spawner",
                                               daemon=True)
                self.thread.start()
            self.jobs.append((make, box, done))
            self.ready.notify()
        done.wait()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]

    def _serve(self) -> None:
        while True:
            with self.lock:
                while not self.jobs:
                    self.ready.wait()
                make, box, done = self.jobs.pop(0)
            try:
                box["value"] = make()
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc
            done.set()


_spawner = _Spawner()


def _from_lasting_thread(make: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """`make()` on a thread that lives as long as volbench (see _Spawner)."""
    if threading.current_thread() is threading.main_thread():
        return make()
    return _spawner.call(make)  # type: ignore[return-value]


def start(
    argv: Sequence[str],
    *,
    log: Path,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    user: str | None = None,
    cgroup: Path | None = None,
    tracker: ProcessTracker | None = None,
) -> Background:
    """Start a server in the background with stdout+stderr appended to `log`."""
    argv = [str(a) for a in argv]
    if _executor is not None:
        _executor.start(tuple(argv), log)
    tag = _new_tag()
    hold = _Hold()
    try:
        with open(log, "ab") as logf:
            popen = _from_lasting_thread(lambda: subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                cwd=cwd, env=base_env({**(env or {}), COMMAND_TAG: tag}),
                start_new_session=True, preexec_fn=_preexec(_join_file(cgroup), _identity(user)),
            ))
    except BaseException:
        hold.release()
        raise
    background = Background(tuple(argv), popen, log, tracker, None, tag)
    try:
        background.token = tracker.process_started(popen.pid, argv) if tracker else None
        hold.release()
    except BaseException:
        hold.release()
        background.stop()
        raise
    return background


@dataclass
class Forked:
    """A function of this program running in a forked child: no exec, so no interpreter
    start (seconds in the emulated lab guest) for a small loop like the power cut's
    probe writer. Its own process group; the parent-death signal set; the cgroup joined."""

    name: str
    pid: int
    tracker: ProcessTracker | None
    token: object = None
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self.tracker is not None:
                    self.tracker.process_ended(self.token)
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if it still runs after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.returncode

    def stop(self, grace: float = 0.0) -> int:
        """End it (SIGTERM, then SIGKILL after `grace`; SIGKILL at once without) and reap."""
        if self.poll() is None:
            if grace > 0:
                procfs.signal_group(self.pid, signal.SIGTERM)
                self.wait(grace)
            procfs.signal_group(self.pid, signal.SIGKILL)
        while self.poll() is None:
            time.sleep(0.02)
        return int(self.returncode or 0)


def fork_call(fn: Callable[[], None], *, name: str, cgroup: Path | None = None,
              tracker: ProcessTracker | None = None) -> Forked:
    """Run `fn()` in a forked child (exit code 0 when it returns, 1 when it raises).

    The child must not take locks another thread of this process may hold (it has only
    the calling thread): system calls, its own files, no logging, no printing to this
    process's streams. It runs with default SIGTERM/SIGINT handling."""
    if _executor is not None:
        raise AssertionError(f"{name}: no forked process under a fake executor")
    hold = _Hold()
    try:
        pid = os.fork()
    except BaseException:
        hold.release()
        raise
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.setsid()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            _preexec(_join_file(cgroup), _Identity())()
            fn()
            code = 0
        finally:
            os._exit(code)
    forked = Forked(name, pid, tracker)
    try:
        forked.token = tracker.process_started(pid, ["(forked)", name]) if tracker else None
    finally:
        hold.release()
    return forked
