"""Opening an SQLite results file: WAL, read-only access that never changes the file,
and one line per SQLite error naming the database and the fix."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

from volbench.config.userfile import kind_of
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


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def path_problem(path: Path, write: bool) -> str | None:
    """What is wrong with `path` as a results database before SQLite opens it, or None:
    not a regular file (a directory, /dev/null), and when writing: a folder that does
    not exist, a read-only filesystem, no permission. Each named as what it is: SQLite
    says "disk I/O error" or "unable to open database file" for all of them, which was
    reported as a damaged database."""
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        return (f"{path} is {kind_of(st.st_mode)}, not a results database; give --db the "
                "path of a database file (results.db)")
    if not write:
        return None
    folder = path.absolute().parent
    if not folder.is_dir():
        return (f"cannot make the results database {path}: the folder {folder} does not "
                f"exist; create it (mkdir -p {folder}) or give --db another path")
    if _read_only_fs(folder):
        return (f"{path} is on a read-only filesystem ({folder}); volbench can read it "
                "(report, export, history) but cannot store anything there; give --db a "
                "path on a writable filesystem (copy the database there first)")
    if not os.access(folder, os.W_OK) or (st is not None and not os.access(path, os.W_OK)):
        return (f"cannot write to {path}: permission denied; give --db a file you may "
                "write, or fix its permissions")
    return None


def database_problem(path: Path | None, exc: sqlite3.DatabaseError) -> str:
    """One line for an SQLite error, naming the database and the fix. "Damaged" only when
    SQLite says the file is (malformed): a read-only filesystem, a directory, a device or
    a full disk are each named as what they are."""
    name = str(path) if path is not None else "the results database"
    detail = str(exc)
    said_of_file = "malformed" in detail or "not a database" in detail
    if path is not None and not said_of_file and \
            (problem := path_problem(path, write=True)) is not None:
        return f"{problem} (SQLite: {detail})"
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
    if "malformed" in detail or "corrupt" in detail:
        return (f"{name} is damaged ({detail}); restore it from a copy, or see what is "
                f"wrong with: sqlite3 {name} 'PRAGMA integrity_check'")
    return (f"cannot use {name} ({detail}); check the path, its permissions and its "
            "filesystem (dmesg may say more)")


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
