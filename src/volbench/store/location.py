"""Where results go: an SQLite file (the default) or a PostgreSQL URL.

`--db` and VOLBENCH_DB take either. A PostgreSQL location keeps the URL as given (libpq
reads the password from it, from PGPASSWORD, PGPASSFILE or a service file) but prints
only a redacted form: `str(location)` never contains the password, so no message,
report or journal line built from it can leak one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from volbench.core.errors import VolbenchError

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
        return redact(self.url)

    def where(self) -> str:
        """`host/database` for one-line messages."""
        return f"{self.host}/{self.database}"


Location = Path | PgLocation


def redact(url: str) -> str:
    """The URL with any password (user:PASSWORD@, password=...) replaced by ***."""
    text = re.sub(r"^([a-z]+://[^/@:]*):[^/@]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", text)


def parse(text: str) -> Location:
    """A file path, or a PostgreSQL location for a postgresql:// (postgres://) URL."""
    if not text.startswith(SCHEMES):
        if "://" in text:
            raise LocationError(
                f"--db {redact(text)}: unknown scheme; give a file path (results.db) or a "
                "postgresql://user@host/database URL")
        return Path(text)
    try:
        parts = urlsplit(text)
        query = dict(parse_qsl(parts.query))
        host = query.get("host") or parts.hostname or os.environ.get("PGHOST") or "localhost"
    except ValueError as exc:
        raise LocationError(f"--db {redact(text)}: {exc}; write it as "
                            "postgresql://user@host:5432/database") from None
    database = parts.path.lstrip("/") or query.get("dbname") or os.environ.get(
        "PGDATABASE", "")
    if not database and "service" not in query and not os.environ.get("PGSERVICE"):
        raise LocationError(f"--db {redact(text)}: no database name; add it after the host "
                            "(postgresql://user@host/volbench)")
    return PgLocation(text, host, database or query.get("service", ""))


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
