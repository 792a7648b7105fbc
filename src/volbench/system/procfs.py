"""The one place that reads processes from /proc and signals them.

Everything volbench knows about a running process comes from here: its stat line
(state, parent, group, start time), its command line and environment, the list of
all processes; and every signal volbench sends to a process or a process group goes
through here, so the rules are written once:

- a process is identified by PID *and* start time, so a PID the kernel has reused for
  someone else's process is never touched;
- a process taken from a cgroup is signalled through a pidfd opened *before* checking
  it is still in that cgroup, so the signal cannot reach a process that replaced it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def read_text(path: str | Path, default: str = "") -> str:
    """A kernel file's text, or `default` when it cannot be read (absent feature, no rights)."""
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return default


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/PID/stat volbench uses (see proc(5))."""

    pid: int
    comm: str
    state: str
    ppid: int
    pgrp: int
    session: int
    start: int  # clock ticks after boot

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def stat(pid: int) -> Stat | None:
    """The process's stat line, or None when it does not exist (any more)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    close = text.rindex(")")
    fields = text[close + 2:].split()
    return Stat(pid, text[text.index("(") + 1:close], fields[0], int(fields[1]),
                int(fields[2]), int(fields[3]), int(fields[19]))


def start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (guards against PID reuse)."""
    st = stat(pid)
    return st.start if st is not None else None


def running(pid: int, start: int | None) -> bool:
    """Alive (a zombie has exited) and the same process as recorded (not a reused PID)."""
    st = stat(pid)
    return st is not None and not st.zombie and (start is None or st.start == start)


def ticks_now() -> int:
    """Clock ticks since boot, the unit of a process's start time."""
    uptime = float(read_text(PROC / "uptime", "0").split()[0])
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def pids() -> Iterator[int]:
    """Every process on the machine (a snapshot; any of them may be gone when used)."""
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def processes() -> Iterator[Stat]:
    for pid in pids():
        st = stat(pid)
        if st is not None:
            yield st


def cmdline(pid: int) -> list[bytes] | None:
    """The process's argv as bytes, or None when it is gone."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return raw.rstrip(b"\0").split(b"\0") if raw else []


def environ_has(pid: int, entry: str) -> bool:
    """Does the process's environment hold exactly `entry` (NAME=value)?"""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return entry.encode() in raw.split(b"\0")


def meminfo(key: str, text: str | None = None) -> int:
    """One /proc/meminfo field (MemTotal, MemAvailable …) in bytes; 0 when absent.

    `text` is another machine's /proc/meminfo, read there (hostinfo.REMOTE_PROBE)."""
    text = read_text(PROC / "meminfo") if text is None else text
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if name == key and parts and parts[0].isdigit():
            return int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return 0


# -- signals -------------------------------------------------------------------------

def signal_pid(pid: int, sig: int) -> bool:
    """Send `sig` to one process; False when it is already gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when the group is empty."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # some member is not ours to signal: the group still exists
    return True


# Ending processes, everywhere (groups, PID lists, cgroups, remote tagged processes):
# SIGTERM, up to TERM_GRACE seconds to exit cleanly, then SIGKILL and up to KILL_WAIT
# seconds to see them gone. Callers that know better (a server's shutdown) pass their own.
TERM_GRACE = 5.0
KILL_WAIT = 2.0
POLL = 0.05


def escalate(send: Callable[[int], bool], alive: Callable[[], bool], grace: float = TERM_GRACE,
             kill_wait: float = KILL_WAIT, *, resend: bool = False) -> bool:
    """The one SIGTERM -> wait -> SIGKILL -> wait. `send(sig)` signals whatever is left
    (False: there was nothing to signal); `alive()` says whether anything is. With
    `resend` the signal is sent again at every poll, so children forked meanwhile get it
    too. Returns True once nothing is alive, False if something outlived both waits."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        if not alive() or not send(sig):
            return not alive()
        deadline = time.monotonic() + wait
        while alive():
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL)
            if resend:
                send(sig)
        else:
            return True
    return not alive()


def kill_group(pgid: int, grace: float, reap: Callable[[], object] | None = None) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after `grace` seconds.

    `reap` collects the leader if it is our direct child (Popen.poll): an unreaped
    leader is a zombie that keeps its group "alive" for the whole grace period.
    """
    def alive() -> bool:
        if reap is not None:
            reap()
        return signal_group(pgid, 0)

    escalate(lambda sig: signal_group(pgid, sig), alive, grace, kill_wait=0.0)


def group_members(pgid: int, leader_start: int | None) -> list[int]:
    """PIDs in process group `pgid` that started at or after the recorded leader start
    (zombies too: a member is gone once its parent has collected it)."""
    return [st.pid for st in processes()
            if st.pgrp == pgid and (leader_start is None or st.start >= leader_start)]


def end_group(pgid: int, leader_start: int | None, grace: float = TERM_GRACE) -> list[int]:
    """SIGTERM, then SIGKILL, the processes of a group we started. Returns the PIDs signalled."""
    members = group_members(pgid, leader_start)

    def send(sig: int) -> bool:
        for pid in members:
            signal_pid(pid, sig)
        return True

    escalate(send, lambda: bool(group_members(pgid, leader_start)), grace)
    return members


def end_processes(found: Iterable[tuple[int, int]], grace: float) -> list[int]:
    """SIGTERM, then SIGKILL after `grace`, each (pid, start) still running; returns the
    PIDs that were signalled."""
    targets = [(pid, start) for pid, start in found if running(pid, start)]

    def send(sig: int) -> bool:
        for pid, start in targets:
            if running(pid, start):
                signal_pid(pid, sig)
        return True

    escalate(send, lambda: any(running(p, s) for p, s in targets), grace)
    return [pid for pid, _ in targets]


def cgroup_pids(directory: Path) -> list[int]:
    """PIDs in a cgroup v1 directory and every cgroup below it."""
    found: list[int] = []
    for procs in [directory / "cgroup.procs", *directory.rglob("*/cgroup.procs")]:
        with contextlib.suppress(FileNotFoundError):
            found += [int(p) for p in procs.read_text().split()]
    return found


def _in_cgroup(pid: int, hierarchy: str, relative: str) -> bool:
    """Is the process in the cgroup `relative` (or below it) of the v1 `hierarchy`?"""
    for line in read_text(PROC / str(pid) / "cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        if hierarchy in controllers.split(","):
            return path == relative or path.startswith(relative + "/")
    return False


def signal_cgroup_member(pid: int, sig: int, hierarchy: str, relative: str) -> bool:
    """Signal `pid` only if it is (still) in our cgroup; through a pidfd opened first, so
    a PID that exits and is reused between the check and the signal is never hit."""
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, OSError):
        return False
    try:
        if not _in_cgroup(pid, hierarchy, relative):
            return False
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)
    return True
