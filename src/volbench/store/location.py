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
from urllib.parse import parse_qsl, unquote, urlsplit

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


# `<scheme>://<user>:<password>@` anywhere in a text: a whole URL, `--db=URL`, a typo'd scheme
# (postgresql+psycopg://, POSTGRESQL://). The password runs to the authority's last `@`
# (before the first / ? # or blank), as urlsplit reads it; libpq stops at the first `@`,
# which is a prefix of it, so either reading is covered.
_USER_INFO = re.compile(r"([a-z][a-z0-9+.-]*://[^\s/?#@:]*):[^\s/?#]*@", re.I)
# `password=` as a URL query parameter or a libpq keyword (after a blank or a start).
_PASSWORD_PARAM = re.compile(r"((?:^|[?&;\s])password=)[^&\s]*", re.I)


def redact(text: str) -> str:
    """`text` (a URL, an argument, a message) with every URL password (user:PASSWORD@,
    password=...) replaced by ***."""
    return _PASSWORD_PARAM.sub(r"\1***", _USER_INFO.sub(r"\1:***@", text))


def secrets(url: str) -> list[str]:
    """The passwords a URL carries, as written and percent-decoded, longest first (for
    scrubbing messages that quote them, such as libpq's "invalid percent-encoded token")."""
    raw: list[str] = []
    for found in re.finditer(r"://[^\s/?#@:]*:([^\s/?#]*)@", url):
        whole = found.group(1)
        raw += [whole, whole.split("@")[0]]  # urlsplit's reading and libpq's
    raw += [m.group(1) for m in re.finditer(r"[?&]password=([^&]*)", url, re.I)]
    found_all = {word for text in raw for word in (text, unquote(text)) if word}
    return sorted(found_all, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """`text` redacted, and without any password of `url` in it, as written or decoded."""
    text = redact(text)
    for secret in secrets(url):
        text = text.replace(secret, "***")
    return text


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
        raise LocationError(f"--db {redact(text)}: {scrub(str(exc), text)}; write it as "
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
