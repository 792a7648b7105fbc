"""Daemons the storage-stack targets start: rpcbind, rpc.statd, rpc.mountd, iscsid, tgtd,
dbus-daemon. Journaled (kind `daemon`) before they start, ended at teardown.

They outlive a volbench killed with SIGKILL, on purpose: `volbench cleanup` needs them to
undo what they serve (iscsiadm cannot log out of a session without iscsid; a tgt LUN
vanishes with tgtd and leaves a session that hangs). volbench's own children die with it
(proc.py sets the parent-death signal), so a daemon is started through `setsid --fork`:
the fork clears that signal, and the daemon leads a session of its own (iscsid, asked to
stop, signals its whole process group: seen in the lab, started from a shell's group it
took the guest's init down). Its PID is found afterwards by its exact command line and a
start time after the journal entry, then recorded; cleanup ends it by PID and start time
(a reused PID is never touched), or, when volbench died before the PID was recorded,
finds it the same way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from volbench.core.errors import ResourceError
from volbench.system import containment, proc, procfs
from volbench.system.journal import Scope, undoer
from volbench.system.procfs import end_group
from volbench.system.recipe import Recipe

T = TypeVar("T")


def find(argv: Sequence[str], since: int) -> tuple[int, int] | None:
    """(pid, start) of the process running exactly `argv`, started at or after `since`."""
    want = [os.fsencode(a) for a in argv]
    found: list[tuple[int, int]] = []
    for pid in procfs.pids():
        if procfs.cmdline(pid) != want:
            continue
        start = procfs.start_ticks(pid)
        if start is not None and start >= since:
            found.append((pid, start))
    return min(found, key=lambda f: f[1]) if found else None


def wait_for(check: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T | None:
    """Poll `check` until it returns something (or the timeout passes: None)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(interval)


def start(
    scope: Scope,
    recipe: Recipe,
    argv: Sequence[str],
    log: Path,
    ready: Callable[[], bool],
    *,
    what: str,
    timeout: float = 60.0,
) -> int:
    """Start `argv` (a daemon kept in the foreground by its own flag), wait until `ready`.

    Returns its PID. The command runs with an absolute program path, so the journal's
    command line identifies it."""
    program = shutil.which(argv[0])
    if program is None:
        raise ResourceError(f"{argv[0]} not found; install it (volbench doctor names the package)")
    argv = [program, *argv[1:]]
    entry = scope.add("daemon", name=Path(program).name, argv=argv, since=procfs.ticks_now())
    recipe.note(f"{proc.command_line(argv)} &   # in the foreground; ended at teardown")
    log.parent.mkdir(parents=True, exist_ok=True)
    # In the run's daemons cgroup (containment.py): ended with the run, after what it serves.
    launcher = proc.start(["setsid", "--fork", *argv], log=log,
                          cgroup=containment.daemon_cgroup())
    launcher.popen.wait(timeout=30)
    found = wait_for(lambda: find(argv, entry.data["since"]), 10)
    if found is None:
        raise ResourceError(f"{what} ({argv[0]}) exited at once: " + _tail(log))
    pid, started = found
    scope.update(entry, pid=pid, start=started)

    def up_or_gone() -> bool | None:
        return True if ready() or procfs.start_ticks(pid) != started else None

    wait_for(up_or_gone, timeout)
    if not ready():
        alive = procfs.start_ticks(pid) == started
        raise ResourceError(
            f"{what} ({argv[0]}) "
            + (f"did not come up within {timeout:g} s" if alive else "exited")
            + f": {_tail(log)}; see its log {log}"
        )
    return pid


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(lines[-3:]) or "(nothing in its log)"


@undoer("daemon")
def _undo_daemon(data: Mapping[str, Any]) -> None:
    if "pid" in data:
        end_group(int(data["pid"]), data.get("start"))
        return
    # Killed between the start and recording the PID: find it as start() would have.
    found = find(data.get("argv", []), int(data.get("since", 0)))
    if found is not None:
        end_group(found[0], found[1])


@contextlib.contextmanager
def temporary(argv: Sequence[str], ready: Callable[[], bool], what: str) -> Iterator[None]:
    """A daemon for the length of an undo, when none answers (not journaled: it is
    stopped before the undo returns)."""
    if ready():
        yield
        return
    with tempfile.TemporaryDirectory() as tmp:
        daemon = proc.start(argv, log=Path(tmp) / "daemon.log")
        try:
            if wait_for(lambda: True if ready() else None, 30) is None:
                raise ResourceError(
                    f"{what} ({argv[0]}) did not come up for the undo: "
                    + daemon.output().strip()[-300:]
                )
            yield
        finally:
            daemon.stop()
