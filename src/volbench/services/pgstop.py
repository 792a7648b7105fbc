"""Stopping a PostgreSQL cluster volbench started: at normal teardown, and in `volbench
cleanup` for one a SIGKILLed volbench left (its journal entry: datadir, PID, start time).

The stop is SIGQUIT to the postmaster (what `pg_ctl stop -m immediate` sends), then the
server processes it started, found by parent PID (they call setsid()), then the SysV
shared memory segment a killed postmaster leaves. Dynamic shared memory needs nothing
here: the server keeps it in its data directory (dynamic_shared_memory_type=mmap, see
postgres.FIXED), which is deleted with the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from volbench.system import proc, procfs
from volbench.system.journal import undoer

STOP_TIMEOUT = 60.0

def _running(pid: int, start: int | None) -> bool:
    return procfs.running(pid, start)


def _serves(pid: int, datadir: Path) -> bool:
    """Is `pid` a postmaster of this data directory (its argv names it)?"""
    return os.fsencode(str(datadir)) in (procfs.cmdline(pid) or [])


def _pidfile(datadir: Path) -> tuple[int | None, str]:
    """(postmaster PID, shared-memory line) from postmaster.pid, if it is there."""
    try:
        lines = (datadir / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None, ""
    pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
    return pid, lines[6] if len(lines) > 6 else ""


def _wait_until(done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _children(pid: int) -> list[tuple[int, int]]:
    """(PID, start ticks) of the processes whose parent is `pid`.

    PostgreSQL's server processes call setsid(): each leads its own process group, so
    the postmaster's group holds only itself; its children are found by parent PID.
    """
    return [(st.pid, st.start) for st in procfs.processes() if st.ppid == pid]


def stop(data: Mapping[str, Any]) -> None:
    """Stop the postmaster journaled in `data` and every server process it started."""
    datadir = Path(data["datadir"])
    file_pid, shm = _pidfile(datadir)
    pid, start = data.get("pid"), data.get("start")
    if pid is None and file_pid is not None and _serves(file_pid, datadir):
        # Journaled but killed before the PID was written down: postmaster.pid knows it.
        pid, start = file_pid, procfs.start_ticks(file_pid)
    if pid is None or not _running(int(pid), start):
        _drop_shared_memory(shm, int(pid or 0))
        return
    pid = int(pid)
    children = _children(pid)
    procfs.signal_pid(pid, signal.SIGQUIT)
    if not _wait_until(lambda: not _running(pid, start), STOP_TIMEOUT):
        procfs.signal_pid(pid, signal.SIGKILL)
    # Server processes leave by themselves once the postmaster is gone; one that does not
    # would keep the target's filesystem busy.
    def left() -> list[int]:
        return [child for child, ticks in children if _running(child, ticks)]

    if not _wait_until(lambda: not left(), 10.0):
        for child in left():
            procfs.signal_pid(child, signal.SIGKILL)
        _wait_until(lambda: not left(), 5.0)
    _drop_shared_memory(shm, pid)


def kill(data: Mapping[str, Any]) -> None:
    """A power cut: the postmaster journaled in `data` and every server process it started
    end at once (SIGKILL, children first found by parent PID: they call setsid()). No
    shutdown of any kind runs; the shared memory segment is left for the next postmaster,
    which removes a dead one's segment itself."""
    pid, start = data.get("pid"), data.get("start")
    if pid is None or not _running(int(pid), start):
        return
    pid = int(pid)
    children = _children(pid)
    procfs.signal_pid(pid, signal.SIGKILL)
    for child, _ in children:
        procfs.signal_pid(child, signal.SIGKILL)

    def left() -> list[int]:
        return [p for p, ticks in [(pid, start), *children] if _running(p, ticks)]

    _wait_until(lambda: not left(), 10.0)


def _drop_shared_memory(shm_line: str, pid: int) -> None:
    """Remove the SysV segment a killed postmaster left (a clean stop removes it itself)."""
    parts = shm_line.split()
    if len(parts) != 2 or not parts[1].isdigit():
        return
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()
    except OSError:
        return
    if not rows:
        return
    names = rows[0].split()
    for row in rows[1:]:
        seg = dict(zip(names, row.split(), strict=False))
        if seg.get("shmid") == parts[1] and seg.get("cpid") == str(pid) \
                and seg.get("nattch") == "0" and shutil.which("ipcrm"):
            proc.run(["ipcrm", "-m", parts[1]], timeout=30, check=False)


@undoer("postgres")
def _undo_postgres(data: Mapping[str, Any]) -> None:
    stop(data)
    pid = data.get("pid")
    if pid is not None and _running(int(pid), data.get("start")):
        raise OSError(f"PostgreSQL (PID {pid}) is still running; stop it by hand: "
                      f"kill -QUIT {pid}")
