"""One writer per experiment: a run claims its experiment for as long as it runs.

Two `volbench run FILE --resume` started together would otherwise both run the
missing runs and store them twice. A claim is a row in the results database (schema
v3, table `claims`) naming the owner: host, boot, PID and the PID's start time (so
a PID reused by another program after the owner died is not mistaken for it). It is
taken and checked in one IMMEDIATE transaction, so of two processes exactly one wins
(on PostgreSQL a transaction holding the store's advisory lock, pg.py: two hosts are
serialised the same way).

A second run of a claimed experiment is refused, not queued: once the first run ends
there is nothing left for it to do, and a queue would hide a mistake (docs/safety.md).
A claim whose owner is gone (killed, rebooted) is taken over with a note. An owner on
another host cannot be checked from here; `--take-over` overrides the claim then.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from volbench.core.errors import VolbenchError
from volbench.store.schema import Connection
from volbench.system import procfs

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ExperimentBusy(VolbenchError):
    """Another live volbench process is running this experiment."""


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: enough to tell a live owner from a dead one on this host
    (boot id, PID and the PID's start time, so a reused PID is not taken for it)."""

    host: str
    boot_id: str
    pid: int
    # Clock ticks after boot at which the process started (/proc/PID/stat field 22).
    pid_start: int
    # Wall-clock time the claim was taken, for messages.
    since: float

    def describe(self) -> str:
        """The owner in words for messages: PID, host and since when (local time)."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"PID {self.pid} on {self.host}, running it since {when}"


def _boot_id() -> str:
    return procfs.read_text(BOOT_ID).strip()


def me() -> Owner:
    """This process as an owner, claimed now."""
    pid = os.getpid()
    return Owner(socket.gethostname(), _boot_id(), pid, procfs.start_ticks(pid) or 0, time.time())


def alive(owner: Owner) -> bool | None:
    """Is the owner still running? None when it is on another host (cannot tell)."""
    if owner.host != socket.gethostname():
        return None
    if owner.boot_id != _boot_id():
        return False  # the machine rebooted since
    return procfs.start_ticks(owner.pid) == owner.pid_start


def _owner(db: Connection, experiment_id: int) -> Owner | None:
    row = db.execute("SELECT host, boot_id, pid, pid_start, since FROM claims"
                     " WHERE experiment_id = ?", (experiment_id,)).fetchone()
    return Owner(*row) if row else None


def insert(db: Connection, experiment_id: int, owner: Owner) -> None:
    """Record `owner` as the experiment's claim, replacing any earlier one; inside the
    caller's transaction (the caller checks the earlier owner first)."""
    db.execute("INSERT OR REPLACE INTO claims (experiment_id, host, boot_id, pid, pid_start,"
               " since) VALUES (?, ?, ?, ?, ?, ?)",
               (experiment_id, owner.host, owner.boot_id, owner.pid, owner.pid_start,
                owner.since))


def claim(db: Connection, experiment_id: int, label: str, *,
          take_over: bool = False) -> str | None:
    """Claim the experiment for this process; a note if a dead owner's claim was taken.

    Raises ExperimentBusy when a live owner (or one on another host) holds it."""
    mine = me()
    db.execute("BEGIN IMMEDIATE")
    try:
        owner = _owner(db, experiment_id)
        note = None
        if owner is not None and (owner.pid, owner.host) != (mine.pid, mine.host):
            state = alive(owner)
            if state or (state is None and not take_over):
                where = "" if state else " (on another host, so volbench cannot tell whether " \
                                         "it still runs)"
                fix = ("wait for it to finish, or stop it (kill its PID), then run with "
                       "--resume" if state else
                       "wait for it; if that run is gone for good, run again with --take-over")
                raise ExperimentBusy(f"{label} is being run by {owner.describe()}{where}; "
                                     f"{fix}")
            note = f"took over {label} from {owner.describe()}, which is no longer running"
        insert(db, experiment_id, mine)
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return note


def clear_dead(db: Connection) -> tuple[list[int], list[tuple[int, Owner]]]:
    """After a killed run (`volbench cleanup --db`): drop every claim whose owner on this
    host is gone and mark its experiment, if still 'running', 'interrupted'. Returns the
    experiments cleared and the claims of other hosts (left: their owners cannot be
    checked from here). Live owners' claims are never touched."""
    cleared: list[int] = []
    elsewhere: list[tuple[int, Owner]] = []
    db.execute("BEGIN IMMEDIATE")  # the claim lock: no run claims in between
    try:
        rows = db.execute("SELECT experiment_id, host, boot_id, pid, pid_start, since"
                          " FROM claims ORDER BY experiment_id").fetchall()
        for experiment_id, *fields in rows:
            owner = Owner(*fields)
            state = alive(owner)
            if state is None:
                elsewhere.append((int(experiment_id), owner))
            elif not state:
                db.execute("DELETE FROM claims WHERE experiment_id = ? AND pid = ? AND"
                           " host = ?", (experiment_id, owner.pid, owner.host))
                db.execute("UPDATE experiments SET status = 'interrupted', finished = ?"
                           " WHERE id = ? AND status = 'running'", (time.time(), experiment_id))
                cleared.append(int(experiment_id))
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return cleared, elsewhere


def release(db: Connection, experiment_id: int) -> None:
    """Drop this process's claim (only its own: a taken-over claim is not ours to drop)."""
    with db:
        db.execute("DELETE FROM claims WHERE experiment_id = ? AND pid = ? AND host = ?",
                   (experiment_id, os.getpid(), socket.gethostname()))
