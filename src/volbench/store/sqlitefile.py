"""Opening an SQLite results file: WAL, read-only access that never changes the file,
and one line per SQLite error naming the database and the fix."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from volbench.core.errors import StoreError
from volbench.store import schema
from volbench.system.block import space


def wal(db: sqlite3.Connection, wait: float = 30.0) -> None:
    """Switch to WAL, waiting for another volbench opening the same new database.

    SQLite answers "database is locked" at once, without its busy handler, when two
    connections change the journal mode together (seen: two experiments started at once
    in one new database), so the wait is done here."""
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def database_problem(path: Path | None, exc: sqlite3.DatabaseError) -> str:
    """One line for an SQLite error, naming the database and the fix."""
    name = str(path) if path is not None else "the results database"
    detail = str(exc)
    if "readonly" in detail or "read-only" in detail:
        return (f"cannot write to {name} ({detail}); make it writable or point --db at "
                "another file")
    if "locked" in detail or "busy" in detail:
        return f"{name} is busy ({detail}); wait for the other volbench to finish"
    if "not a database" in detail:
        return f"{name} is not a volbench database ({detail}); check the path (--db)"
    if "full" in detail and path is not None:
        # SQLite's "database or disk is full": the database is fine; freeing space and
        # --resume completes the experiment (docs/safety.md, A full disk).
        return space.output_full(path.absolute().parent, f"the results database {path.name}",
                                 "give --db a path on a larger filesystem, then run with "
                                 "--resume; the runs stored so far are kept")
    return (f"{name} is damaged ({detail}); restore it from a copy, or see what is wrong "
            f"with: sqlite3 {name} 'PRAGMA integrity_check'")


def _connect_read_only(path: Path, query: str) -> tuple[sqlite3.Connection, int]:
    db = sqlite3.connect(path.absolute().as_uri() + query, uri=True, timeout=30)
    try:
        return db, int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError:
        db.close()
        raise


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot change the file. A database of an older schema is
    upgraded in a copy in memory, so reading it leaves the file as it was."""
    try:
        db, version = _connect_read_only(path, "?mode=ro")
    except sqlite3.DatabaseError as exc:
        try:
            # A WAL database in a folder this user cannot write: SQLite cannot create the
            # shared-memory file readers need. Read the file as it is instead (what a
            # writer has not checkpointed into it yet is not seen).
            db, version = _connect_read_only(path, "?mode=ro&immutable=1")
        except sqlite3.DatabaseError:
            raise StoreError(database_problem(path, exc)) from exc
    if version < schema.VERSION:
        memory = sqlite3.connect(":memory:")
        db.backup(memory)
        db.close()
        db = memory
    schema.migrate(db, path)
    return db
