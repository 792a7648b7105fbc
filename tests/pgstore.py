"""A real PostgreSQL server for the store's tests: one per test session, started by
services/postgres.py (the code pgbench's clusters use) on a Unix socket in a temporary
directory, stopped and deleted at the end. Each test gets a database of its own, owned by
an ordinary role (no superuser), and dropped afterwards.

The fixtures are registered once in tests/conftest.py (one server per session).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import need, tool
from volbench.services import postgres
from volbench.system import journal
from volbench.targets.base import Built

OWNER = "vbowner"
PASSWORD = "s3cret-Pw_42"  # the owner's password: tests check it is never printed
# Roles in this group log in with their password too (tests/system/test_passwords.py).
PW_GROUP = "vbpw"


@dataclass(frozen=True)
class PgServer:
    sockdir: Path
    port: int

    def url(self, user: str = "postgres", database: str = "postgres", password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@/{database}?host={self.sockdir}&port={self.port}"

    def admin(self, sql: str) -> None:
        """Run one statement as the superuser (outside a transaction)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with cluster("pgstore") as (found, server):
        # Passwords are checked for the owner (scram), trust stays for the superuser.
        hba = server.datadir / "pg_hba.conf"
        hba.write_text(f"local all {OWNER} scram-sha-256\n"
                       f"local all +{PW_GROUP} scram-sha-256\n" + hba.read_text())
        found.admin(f"CREATE ROLE {OWNER} LOGIN PASSWORD '{PASSWORD}'")
        found.admin(f"CREATE ROLE {PW_GROUP} NOLOGIN")
        found.admin("SELECT pg_reload_conf()")
        yield found


@contextmanager
def cluster(name: str) -> Iterator[tuple[PgServer, postgres.Server]]:
    """A real PostgreSQL server of the tests (volbench's own cluster code, journaled),
    its folders under /var/tmp/volbench-tests/NAME-*, removed at the end."""
    need(os.geteuid() == 0, "the test PostgreSQL server runs as postgres: needs root")
    for tool_name in ("initdb", "postgres"):
        tool(tool_name)
    pytest.importorskip("psycopg")
    # Under /var/tmp like the tests' workdir: pytest's own tmp folder is root-only, and
    # the postgres user must reach its socket and data directories.
    base = Path("/var/tmp/volbench-tests") / f"{name}-{uuid.uuid4().hex[:8]}"
    (base / "data").mkdir(parents=True)
    (base / "svc").mkdir()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VOLBENCH_STATE_DIR", str(base / "state"))
            with (journal.opened(name) as jrnl, jrnl.scope() as scope,
                  postgres.cluster(postgres.ClusterConfig(), scope,
                                   Built(name, "directory", base / "data"),
                                   base / "svc") as server):
                found = PgServer(server.sockdir, server.port)
                # A server for the store's tests, not a benchmark's: any role may log in
                # over the socket (volbench's clusters admit the superuser and the
                # benchmark role only, through the peer map, services/pghba.py).
                hba = server.datadir / "pg_hba.conf"
                hba.write_text(hba.read_text() + "local all all trust\n")
                found.admin("SELECT pg_reload_conf()")
                yield found, server
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh database owned by an ordinary role; its URL carries the password."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    pg_server.admin(f"CREATE DATABASE {name} OWNER {OWNER}")
    try:
        yield pg_server.url(OWNER, name, PASSWORD)
    finally:
        pg_server.admin(f"DROP DATABASE {name} WITH (FORCE)")
