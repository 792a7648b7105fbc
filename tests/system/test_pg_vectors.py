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
def bench_connection(base: Path, major: int | None, db: str = "bench",
                     server_out: list[Any] | None = None) -> Iterator[tuple[Any, int]]:
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
        if server_out is not None:
            server_out.append(server)
        with psycopg.connect(f"{where} user=postgres dbname=postgres",
                             autocommit=True) as su:
            su.execute(f"CREATE DATABASE {db} OWNER {pgrole.BENCH_ROLE}")
            with psycopg.connect(f"{where} user={pgrole.BENCH_ROLE} dbname={db}",
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


# What the benchmark role can leave in its own database for whoever comes next: a
# TRUNCATE trigger and, before pg_catalog (an owner may ALTER DATABASE … SET search_path),
# functions named like pg_catalog's. Each writes a file through COPY TO PROGRAM, which
# works only when the superuser runs it.
TRAPS = """
CREATE FUNCTION public.trap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN COPY (SELECT 1) TO PROGRAM 'touch {O}/trigger'; RETURN NULL; END $$;
CREATE TABLE pgbench_history (a int);
CREATE TABLE pgbench_branches (a int);
CREATE TABLE pgbench_tellers (a int);
CREATE TRIGGER trap BEFORE TRUNCATE ON pgbench_history
    FOR EACH STATEMENT EXECUTE FUNCTION public.trap();
CREATE FUNCTION public.current_database() RETURNS name LANGUAGE plpgsql AS $$
BEGIN COPY (SELECT 1) TO PROGRAM 'touch {O}/search-path'; RETURN 'x'; END $$;
CREATE FUNCTION public.pg_database_size(name) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN COPY (SELECT 1) TO PROGRAM 'touch {O}/search-path-size'; RETURN 1; END $$;
ALTER DATABASE {D} SET search_path = public, pg_catalog;
"""


def test_volbench_s_own_statements_run_none_of_the_role_s_code(workdir: Path) -> None:
    """Issue 34's audit: volbench's superuser ran CHECKPOINT and the size query in the
    benchmark database, and the multi-host driver's VACUUM/TRUNCATE there; a TRUNCATE
    trigger the scripts' role made ran COPY TO PROGRAM as postgres. Now each of those
    psql commands (the same argv volbench runs) runs none of the role's code as the
    superuser, and the size is still read."""
    import subprocess

    from pgowncommands import own_psql_commands
    from volbench.services import pgclients

    tool("initdb")
    open_dir = workdir / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    servers: list[Any] = []
    with bench_connection(workdir / uuid.uuid4().hex[:8], None, "bench_s10",
                          servers) as (conn, _):
        conn.execute(TRAPS.format(O=open_dir, D="bench_s10").encode())
        values = servers[0].values()
        commands = own_psql_commands(workdir / "cmds")
        ran = 0
        for argv in commands:
            if any("DROP DATABASE" in a for a in argv):
                continue  # would drop the traps (and runs in postgres anyway)
            argv = [str(Path(values["bindir"]) / "psql"), *argv[1:]]
            for flag, key in (("-h", "host"), ("-p", "port")):
                argv[argv.index(flag) + 1] = values[key]
            if "-o" in argv:
                argv[argv.index("-o") + 1] = str(workdir / "size.txt")
            subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
            ran += 1
        assert ran >= 4 and pgclients.CLIENTS
    assert sorted(p.name for p in open_dir.iterdir()) == [], "the role's code ran as postgres"
    assert int((workdir / "size.txt").read_text()) > 1_000_000  # the real size, not 1
