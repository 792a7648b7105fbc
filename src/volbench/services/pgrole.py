"""The role benchmark SQL runs as: not the superuser.

pgbench scripts are the user's SQL. Run as the `postgres` superuser they could write or
run anything on this machine (`COPY … TO PROGRAM`, `COPY … TO '/file'`, `CREATE
TABLESPACE … LOCATION`, untrusted languages). So every pgbench (init and measured) runs as
`volbench_bench`, a login role with no superuser, database, role, replication or RLS
bypass rights, that owns only the benchmark databases (volbench creates them, as the
superuser, with this owner) and may not even connect to the maintenance databases.
volbench's own statements (CREATE/DROP DATABASE, CHECKPOINT, sizes) stay the superuser's.
"""

from __future__ import annotations

from pathlib import Path

from volbench.system.recipe import Recipe

BENCH_ROLE = "volbench_bench"
SETUP_SQL = (
    f"CREATE ROLE {BENCH_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
    "NOBYPASSRLS",
    "REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC",
    "REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC",
)


def create_bench_role(psql: Path, socket_dir: Path, port: int, superuser: str,
                      recipe: Recipe) -> str:
    """Make the benchmark role in a new cluster and return its name. Guarantees: the role
    cannot run programs, read or write server files or make tablespaces."""
    argv = [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(socket_dir),
            "-p", str(port), "-U", superuser, "-d", "postgres"]
    for sql in SETUP_SQL:
        argv += ["-c", sql]
    recipe.run(argv, timeout=60, hint="the benchmark role could not be made in the new "
                                      "cluster; see psql's message above")
    return BENCH_ROLE
