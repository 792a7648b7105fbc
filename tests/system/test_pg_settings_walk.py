"""The settings allow-list (services/pgsettings.py) against pg_settings of every
PostgreSQL major the tests install (tests/pginstalls.py: 13, 14, 16, 17, 18, and the
distribution's 15), each read from a running server started by volbench's own code.

Fails when an allowed setting is a string (a string can name a file, a library or a
command), when an allowed enum has a value that is not a plain word, when a string or
enum setting whose name or description speaks of a file, directory, path, library,
provider, command or program is allowed, or when an allowed name exists in no major
(a typo would allow nothing and refuse what was meant)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pginstalls import BUNDLES, pg_bindir
from support import need, tool
from volbench.services import pgsettings, postgres
from volbench.system import journal, proc
from volbench.targets.base import Built

pytestmark = [pytest.mark.root, pytest.mark.slow]

# A string or enum setting whose name or description says it names one of these.
NAMES_A_THING = re.compile(r"file|director|path|librar|provider|command|program|plugin|"
                           r"socket|tablespace|destdir|include|module", re.IGNORECASE)
PLAIN_WORD = re.compile(r"^[a-z0-9_]+( [a-z]+)?$")


@contextmanager
def running(major: int | None, base: Path) -> Iterator[postgres.Server]:
    pg_bin = str(pg_bindir(major)) if major is not None else ""
    (base / "data").mkdir(parents=True)
    (base / "svc").mkdir()
    with (journal.opened(f"walk{major}") as jrnl, jrnl.scope() as scope,
          postgres.cluster(postgres.make_config({}, pg_bin), scope,
                           Built("walk", "directory", base / "data"), base / "svc") as server):
        yield server


def pg_settings(server: postgres.Server) -> list[tuple[str, str, list[str], str]]:
    """(name, vartype, enumvals, descriptions) of every setting the server has."""
    sql = ("SELECT name, vartype, coalesce(array_to_string(enumvals, '|'), ''), "
           "short_desc || ' ' || coalesce(extra_desc, '') FROM pg_settings")
    done = proc.run([str(server.bindir / "psql"), "-X", "-At", "-F", "\t", "-h",
                     str(server.sockdir), "-p", str(server.port), "-U", "postgres", "-d",
                     "postgres", "-c", sql], timeout=60)
    rows = []
    for line in done.stdout.splitlines():
        name, vartype, values, text = line.split("\t", 3)
        rows.append((name, vartype, [v for v in values.split("|") if v], text))
    return rows


def problems_of(rows: list[tuple[str, str, list[str], str]]) -> list[str]:
    found = []
    for name, vartype, values, text in rows:
        allowed = pgsettings.problem(name) is None
        if allowed and vartype == "string":
            found.append(f"{name}: a string setting is allowed")
        if allowed and vartype == "enum" and not all(PLAIN_WORD.match(v) for v in values):
            found.append(f"{name}: an allowed enum has values that are not words: {values}")
        if vartype == "string" and NAMES_A_THING.search(f"{name} {text}") and allowed:
            found.append(f"{name}: names a file, library or command, and is allowed")
    return found


def test_the_allow_list_against_pg_settings_of_every_major(workdir: Path) -> None:
    need(bool(tool("initdb")), "PostgreSQL")
    seen: set[str] = set()
    walked = []
    for major in [None, *sorted(BUNDLES)]:
        with running(major, workdir / uuid.uuid4().hex[:8]) as server:
            rows = pg_settings(server)
        assert len(rows) > 250, (major, len(rows))
        assert problems_of(rows) == [], major
        # The settings the issue found: each refused, on every major that has it.
        for name in ("config_file", "hba_file", "archive_command", "jit_provider",
                     "shared_preload_libraries", "dynamic_library_path", "data_directory"):
            assert name in {r[0] for r in rows}
            assert pgsettings.problem(name) is not None
        seen |= {r[0] for r in rows}
        walked.append(major)
    assert len(walked) == 6
    assert sorted(pgsettings.NAMES - seen) == []


def test_the_check_itself_fails_on_an_allowed_file_setting() -> None:
    """The walk's check finds what it looks for (a string setting naming a file)."""
    rows = [("log_directory", "string", [], "Sets the destination directory for log files."),
            ("wal_sync_method", "enum", ["fsync", "fdatasync"], "Selects the method.")]
    assert problems_of(rows) == []  # refused string, allowed enum of words
    original = pgsettings.NAMES
    try:
        pgsettings.NAMES = original | {"log_directory"}
        assert problems_of(rows) == ["log_directory: a string setting is allowed",
                                     "log_directory: names a file, library or command, "
                                     "and is allowed"]
    finally:
        pgsettings.NAMES = original
