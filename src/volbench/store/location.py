"""Where results go: an SQLite file (the default) or a PostgreSQL URL.

`--db` and VOLBENCH_DB take either. A PostgreSQL location keeps the connection string as
given (libpq reads the password from it, from PGPASSWORD, PGPASSFILE or a service file)
but prints only a redacted form (redaction.py): `str(location)` never contains the
password, so no message, report or journal line built from it can leak one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from volbench.core.errors import VolbenchError
from volbench.store import redaction

ENV = "VOLBENCH_DB"
DEFAULT_FILE = Path("volbench.db")
SCHEMES = ("postgresql://", "postgres://")


class LocationError(VolbenchError):
    """--db / VOLBENCH_DB names neither a file nor a usable PostgreSQL URL."""


@dataclass(frozen=True)
class PgLocation:
    """A PostgreSQL store: the libpq URL (kept, never printed) and what may be printed."""

    url: str = field(repr=False)
    host: str
    database: str

    def __str__(self) -> str:
        return redaction.redact_conninfo(self.url)

    def where(self) -> str:
        """`host/database` for one-line messages."""
        return f"{self.host}/{self.database}"


Location = Path | PgLocation


# Redaction lives in redaction.py (libpq's own reading); these names stay for callers.
redact = redaction.redact
scrub = redaction.scrub


def parse(text: str) -> Location:
    """A file path, or a PostgreSQL location: a postgresql:// (postgres://) URL, or a
    libpq key=value string (`host=… dbname=…`). Read with libpq's own rules (psycopg);
    what libpq cannot read is refused here, in one line without its password."""
    read = redaction.parse(text) if ("=" in text or "://" in text) else None
    if text.startswith(SCHEMES) or (read is not None and "://" not in text):
        if read is None:
            raise LocationError(f"--db {redaction.redact_conninfo(text)}: {_why_not(text)}; "
                                "write it as postgresql://user@host:5432/database (a "
                                "password with @ / ? # or a blank percent-encoded: %40 %2F "
                                "%3F %23 %20)")
        redaction.remember(text)
        return _pg_location(text, read)
    if "://" in text:
        raise LocationError(
            f"--db {redaction.redact_conninfo(text)}: unknown scheme; give a file path "
            "(results.db) or a postgresql://user@host/database URL")
    return Path(text)


def _why_not(text: str) -> str:
    """libpq's own words on a connection string it cannot read, without its secrets."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return ("a postgresql:// --db needs psycopg 3: pip install 'volbench[pg]' (or: "
                "pip install 'psycopg[binary]')")
    try:
        conninfo_to_dict(text)
    except Exception as exc:
        return redaction.scrub(str(exc).strip().splitlines()[0], text)
    return "libpq cannot read it"


def _pg_location(text: str, read: dict[str, str]) -> PgLocation:
    host = read.get("host") or read.get("hostaddr") or os.environ.get("PGHOST") or "localhost"
    database = read.get("dbname") or os.environ.get("PGDATABASE", "")
    service = read.get("service") or os.environ.get("PGSERVICE", "")
    if not database and not service:
        raise LocationError(f"--db {redaction.redact_conninfo(text)}: no database name; add "
                            "it after the host (postgresql://user@host/volbench)")
    return PgLocation(text, host, database or service)


def resolve(given: str | None) -> Location:
    """--db if given, else VOLBENCH_DB, else volbench.db in the current directory."""
    if given:
        return parse(given)
    from_env = os.environ.get(ENV, "").strip()
    return parse(from_env) if from_env else DEFAULT_FILE


def sibling(location: Location, suffix: str) -> Path:
    """A file next to the database (`results-report.md` for results.db); for PostgreSQL
    in the current directory (volbench-report.md)."""
    if isinstance(location, Path):
        return location.with_name(location.stem + suffix)
    return Path("volbench" + suffix)
