"""Issue 34's SQL vectors (bench/pgvectors.py) on a real server, as the role pgbench
connects as: volbench_bench, through the same peer map and socket as pgbench. Each
statement fails with the error the catalogue names, and nothing appears in a folder the
postgres user may write (where a COPY TO PROGRAM or a file write would have left one).
On every major the tests install (the distribution's 15 and 18 here: 13-17's roles and
grants are the same; tests/system/test_pg_settings_walk.py walks all six)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pginstalls import pg_bindir
from support import ROOT, tool
from volbench.services import pgrole, postgres
from volbench.system import journal
from volbench.targets.base import Built

sys.path.insert(0, str(ROOT / "bench"))
from pgvectors import SQL, Vector, said

pytestmark = pytest.mark.root


@contextmanager
def bench_connection(base: Path, major: int | None) -> Iterator[tuple[Any, int]]:
    """A cluster of volbench's own, a database the benchmark role owns, and a psycopg
    connection as that role (and one as the superuser, held open: a backend to try to
    terminate)."""
    import psycopg

    pg_bin = str(pg_bindir(major)) if major is not None else ""
    (base / "data").mkdir(parents=True)
    (base / "svc").mkdir()
    with (journal.opened("vectors") as jrnl, jrnl.scope() as scope,
          postgres.cluster(postgres.make_config({}, pg_bin), scope,
                           Built("v", "directory", base / "data"), base / "svc") as server):
        where = f"host={server.sockdir} port={server.port}"
        with psycopg.connect(f"{where} user=postgres dbname=postgres",
                             autocommit=True) as su:
            su.execute(f"CREATE DATABASE bench OWNER {pgrole.BENCH_ROLE}")
            with psycopg.connect(f"{where} user={pgrole.BENCH_ROLE} dbname=bench",
                                 autocommit=True) as conn:
                conn.execute("CREATE TABLE t (a text)")
                yield conn, su.info.backend_pid


@pytest.mark.parametrize("major", [None, 18], ids=["distribution", "18"])
def test_every_sql_vector_fails_as_the_benchmark_role(workdir: Path, major: int | None
                                                      ) -> None:
    import psycopg

    tool("initdb")
    open_dir = workdir / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    escaped: list[str] = []
    with bench_connection(workdir / uuid.uuid4().hex[:8], major) as (conn, su_pid):
        for vector in SQL:
            sql = vector.sql.format(O=open_dir, P=su_pid)
            try:
                conn.execute(sql.encode())
            except psycopg.Error as exc:
                if not said(vector, str(exc)):
                    escaped.append(f"{vector.name}: failed otherwise: {exc}")
                continue
            escaped.append(f"{vector.name}: ran ({sql})")
    assert escaped == [], "\n".join(escaped)
    assert list(open_dir.iterdir()) == [], "something was written as postgres"


def _names(vectors: list[Vector]) -> set[str]:
    return {v.name for v in vectors}


def test_the_catalogue_names_the_issue_s_sql() -> None:
    assert {"copy-to-program", "copy-to-file", "lo-import", "read-file",
            "untrusted-language", "create-tablespace"} <= _names(SQL)
