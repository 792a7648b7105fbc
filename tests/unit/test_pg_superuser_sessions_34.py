"""volbench's superuser never opens a session in a database the benchmark role owns
(issue 34's audit): there the role's objects (a TRUNCATE trigger, a view, a function put
before pg_catalog by ALTER DATABASE … SET search_path) run as whoever runs the statement.
Every psql volbench runs for a pgbench workload, in setup, after a run and in the
multi-host driver, connects either as the superuser to `postgres` or as the benchmark
role. tests/system/test_pg_vectors.py runs these same commands on a real server."""

from __future__ import annotations

from pathlib import Path

from pgowncommands import own_psql_commands


def test_the_superuser_connects_only_to_postgres(tmp_path: Path) -> None:
    commands = own_psql_commands(tmp_path)
    assert len(commands) >= 5  # create, checkpoint+size, after, prepare, count
    for argv in commands:
        user, db = argv[argv.index("-U") + 1], argv[argv.index("-d") + 1]
        assert (user, db) == ("postgres", "postgres") or user == "volbench_bench", argv
    # The role's own statements are the ones in its database (VACUUM, TRUNCATE, count).
    assert any(a[a.index("-U") + 1] == "volbench_bench" and "TRUNCATE pgbench_history" in a
               for a in commands)
