"""The one place that starts processes.

Habits enforced here: argv lists only (never a shell); every call has a
timeout; the exit code decides failure, never stderr; output goes to files (no
pipe deadlocks, no size limit) and comes back decoded; each child leads its own
process group so a timeout or Ctrl-C ends the whole tree; children get
PR_SET_PDEATHSIG so that even a SIGKILLed volbench does not leave its direct
children running; the children's resource usage (user/sys CPU) is collected
with wait4 for the real/user/sys figures of macro jobs.
"""

from __future__ import annotations

import contextlib
import ctypes
import grp
import os
import pwd
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from volbench.errors import CommandFailed, CommandTimeout

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
# Grace between SIGTERM and SIGKILL when ending a process group.
KILL_GRACE = 5.0


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


def command_line(argv: Sequence[str]) -> str:
    """How a command is shown in recipes and errors (copy-pasteable)."""
    return shlex.join(argv)


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for children: C locale so tools print parseable numbers."""
    env = dict(os.environ)
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


def _preexec(cgroup_procs: str | None, who: _Identity) -> Callable[[], None]:
    # Runs in the child between fork and exec: only simple system calls, no Python-level
    # locks. The cgroup is joined *before* dropping to another user (only root may move a
    # process into a cgroup), which is why volbench switches user here and not through
    # Popen's user= (CPython applies that before preexec_fn runs).
    payload = b"0"  # writing 0 to cgroup.procs moves the writing process itself

    def setup() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cgroup_procs is not None:
            fd = os.open(cgroup_procs, os.O_WRONLY)
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
    """SIGTERM the group, then SIGKILL whatever is left after a grace period.

    `reap` collects the leader if it is our direct child (Popen.poll): an unreaped
    leader is a zombie that keeps its group "alive" for the whole grace period.
    """
    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if reap is not None:
                reap()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


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
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read(f: IO[bytes]) -> str:
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
) -> Completed:
    """Run argv to completion.

    With `check` (the default) a non-zero exit raises CommandFailed and a timeout
    CommandTimeout; without it the caller inspects `returncode` and `timed_out`.

    `cgroup` is a cgroup directory the child joins before exec (blkio throttling).
    `keep_group=True` leaves descendants running after the leader exits: only for
    commands that start daemons on purpose (pg_ctl start), which must be tracked separately.
    """
    argv = [str(a) for a in argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as stdin:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        procs = str(cgroup / "cgroup.procs") if cgroup is not None else None
        started = time.time()
        popen = subprocess.Popen(
            argv, stdin=stdin, stdout=out, stderr=err, cwd=cwd, env=base_env(env),
            start_new_session=True, preexec_fn=_preexec(procs, _identity(user)),
        )
        token = tracker.process_started(popen.pid, argv) if tracker else None
        try:
            if keep_group:
                code, utime, stime, timed_out = _wait_leader_only(popen, timeout)
            else:
                code, utime, stime, timed_out = _wait(popen, timeout)
        finally:
            if tracker is not None and not keep_group:
                tracker.process_ended(token)
        ended = time.time()
        result = Completed(tuple(argv), code, _read(out), _read(err), started, ended,
                           utime, stime, timed_out)
    if timed_out and check:
        raise CommandTimeout(argv, timeout, result.stderr)
    if check and code != 0:
        raise CommandFailed(argv, code, result.stderr or result.stdout, hint)
    return result


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

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

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
        if self.tracker is not None:
            self.tracker.process_ended(self.token)
        return code


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
    procs = str(cgroup / "cgroup.procs") if cgroup is not None else None
    with open(log, "ab") as logf:
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, cwd=cwd,
            env=base_env(env), start_new_session=True,
            preexec_fn=_preexec(procs, _identity(user)),
        )
    token = tracker.process_started(popen.pid, argv) if tracker else None
    return Background(tuple(argv), popen, log, tracker, token)
