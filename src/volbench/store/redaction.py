"""Passwords out of everything volbench prints, stores or writes to a crash file.

A connection string is read with libpq's own rules (psycopg's `conninfo_to_dict`, which
calls PQconninfoParse), and every secret key is hidden: those libpq marks secret
(`dispchar` '*': password, sslpassword, oauth_client_secret in libpq 18) and the SCRAM
keys (scram_client_key, scram_server_key: credentials, marked 'debug'). Where the
text is not a connection string, or not only one (a message, a traceback, an argument
such as `--db=URL`), the same places are found by their shape:

- a URL's user information: after `SCHEME://` (any scheme: a misspelt one too) up to the
  first `/`, to its last `@`; libpq reads the password up to the first `@` (`?` and `#`
  are part of it), the URL standard to the last: both are covered, and the user's name
  stays;
- a secret key in a URL's query (`?sslpassword=…&`) or in `key=value` form (`password=…`,
  `password = '…'` quoted with blanks and `\\'`);
- in a whole connection string, a `:` before the first `/` and an `@` after it (a
  password with a `/`, which libpq would read as a host and a port): nothing between
  that `:` and the last `@` is shown.

What was hidden is remembered (as written and percent-decoded), with PGPASSWORD's value,
and `clean` takes any of them out of a text that quotes them another way (libpq's
"invalid percent-encoded token: "…""). Secrets shorter than MIN_SCRUB are only hidden
where they stand in a connection string (taking every 'a' out of a message would say
nothing useful; docs/store.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import cache
from urllib.parse import unquote

HIDDEN = "***"
# Credentials whatever libpq's version says of them (it marks the SCRAM keys 'debug').
ALWAYS_SECRET = ("password", "sslpassword", "oauth_client_secret", "scram_client_key",
                 "scram_server_key")
MIN_SCRUB = 3
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_known: set[str] = set()


@cache
def secret_keys() -> frozenset[str]:
    """Every libpq keyword whose value is secret: psycopg's libpq says which ('*')."""
    try:
        from psycopg import pq

        marked = {o.keyword.decode() for o in pq.Conninfo.get_defaults()
                  if o.dispchar == b"*"}
    except Exception:  # no psycopg here: the keywords of libpq 18
        marked = set()
    return frozenset(marked | set(ALWAYS_SECRET))


def parse(text: str) -> dict[str, str] | None:
    """libpq's reading of a connection string (URL or key=value), None if it has none."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        return {k: str(v) for k, v in conninfo_to_dict(text).items()}
    except Exception:  # psycopg.ProgrammingError: libpq cannot read it
        return None


def _keys_pattern() -> re.Pattern[str]:
    keys = "|".join(sorted(secret_keys(), key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])((?:{keys})\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)", re.I)


def _url(text: str, start: int, whole: bool, found: list[str]) -> tuple[str, int]:
    """The URL beginning at `start` (after its scheme), its secrets hidden; its end."""
    end = len(text) if whole else (m.start() if (m := re.compile(r"\s").search(text, start))
                                   else len(text))
    body = text[start:end]
    authority = body.split("/", 1)[0]
    if "@" in authority:
        at = authority.rindex("@")
        user, colon, password = authority[:at].partition(":")
        if colon:
            found.append(password)
            body = f"{user}:{HIDDEN}" + body[at:]
    head, mark, query = body.partition("?")
    if mark:
        params = []
        for param in query.split("&"):
            key, eq, value = param.partition("=")
            if eq and unquote(key).strip().lower() in secret_keys():
                found.append(value)
                param = f"{key}={HIDDEN}"
            params.append(param)
        body = head + mark + "&".join(params)
    return body, end


def _hide(text: str, whole: bool, found: list[str]) -> str:
    out, i = [], 0
    while (m := _SCHEME.search(text, i)) is not None:
        out.append(text[i:m.end()])
        body, i = _url(text, m.end(), whole, found)
        out.append(body)
    out.append(text[i:])
    hidden = "".join(out)
    if "=" not in hidden:  # every secret keyword is `key=value`: nothing to ask libpq
        return hidden  # (its keywords import psycopg, ~0.2 s of every run: issue 33)

    def keyword(m: re.Match[str]) -> str:
        found.append(m.group(2).strip("'"))
        return m.group(1) + HIDDEN

    return _keys_pattern().sub(keyword, hidden)


def redact_conninfo(text: str) -> str:
    """A whole connection string (a --db value, VOLBENCH_DB) as it may be shown."""
    found: list[str] = []
    shown = _hide(text, True, found)
    read = parse(text)
    scheme = _SCHEME.match(shown)
    if scheme is not None and f":{HIDDEN}@" not in shown:
        # A password with a `/` in it (`u:p/w@h/db`): libpq reads no password there (the
        # host is `u`), but the `:` before the first `/` and an `@` after it say what was
        # meant; nothing between that `:` and the last `@` is shown.
        rest = text[scheme.end():]
        before = rest[:rest.rindex("@")] if "@" in rest else ""
        user, colon, _ = before.split("/", 1)[0].partition(":")
        if colon:
            found.append(before[len(user) + 1:])
            shown = f"{shown[:scheme.end()]}{user}:{HIDDEN}{shown[shown.rindex('@'):]}"
    secrets = [v for k, v in (read or {}).items() if k in secret_keys() and v]
    _remember([*found, *secrets])
    return _scrubbed(shown, [*found, *secrets], MIN_SCRUB)


def redact(text: str) -> str:
    """Any text (a message, an argument, a traceback) with the secrets of every
    connection string in it hidden, and every remembered secret taken out."""
    found: list[str] = []
    if "=" in text and text.startswith("-") and "://" in text.partition("=")[2]:
        flag, _, value = text.partition("=")  # --db=URL: the value is a whole URL
        return f"{flag}={redact_conninfo(value)}"
    # "=" first: a text without one is no key=value string, and asking libpq would import
    # psycopg (~0.2 s at start-up, issue 33) for an answer that cannot change the result.
    if _SCHEME.match(text) or ("=" in text and parse(text) is not None):
        return redact_conninfo(text)  # one whole connection string (an argument)
    shown = _hide(text, False, found)
    _remember(found)
    return clean(shown)


def _variants(secret: str) -> set[str]:
    return {secret, unquote(secret), secret.replace("\\'", "'").replace("\\\\", "\\")}


def _remember(secrets: Iterable[str]) -> None:
    for secret in secrets:
        _known.update(v for v in _variants(secret) if v and v != HIDDEN)


def remember(text: str) -> None:
    """Note the secrets of a connection string (or a bare password) for `clean`."""
    redact_conninfo(text)


def _scrubbed(text: str, secrets: Iterable[str], shortest: int) -> str:
    for secret in sorted({v for s in secrets for v in _variants(s)}, key=len, reverse=True):
        if len(secret) >= shortest and secret != HIDDEN:
            text = text.replace(secret, HIDDEN)
    return text


def clean(text: str) -> str:
    """`text` without any secret seen so far, nor PGPASSWORD's value."""
    env = os.environ.get("PGPASSWORD", "")
    return _scrubbed(text, [*_known, *([env] if env else [])], MIN_SCRUB)


def scrub(text: str, conninfo: str) -> str:
    """`text` (a message about `conninfo`) redacted, and without any secret of
    `conninfo`, as written or decoded."""
    found: list[str] = []
    _hide(conninfo, True, found)
    secrets = [*found, *[v for k, v in (parse(conninfo) or {}).items()
                         if k in secret_keys() and v]]
    return clean(_scrubbed(redact(text), secrets, MIN_SCRUB))
