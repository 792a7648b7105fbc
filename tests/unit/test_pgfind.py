"""Where volbench finds PostgreSQL: pg_bin, then PATH, then pg_config, then the
distributions' directories (newest major first); and the error when it is nowhere.

The search runs on directories made here (programs that are empty shell scripts) with
its PATH and distribution globs pointed at them; the real installations are found and
run in test_pg_majors.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakeexec import Answer, Replay
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document
from volbench.report.compare import environment_differences
from volbench.services import postgres
from volbench.system.host import hostinfo, pgfind
from volbench.workloads import pgbench


def bindir(path: Path, programs: tuple[str, ...] = pgfind.PROGRAMS) -> Path:
    path.mkdir(parents=True)
    for name in programs:
        (path / name).write_text("#!/bin/sh\n")
        (path / name).chmod(0o755)
    return path


def nowhere(tmp_path: Path) -> tuple[str, tuple[str, ...]]:
    """An empty PATH and distribution globs that match nothing."""
    (tmp_path / "empty").mkdir()
    return str(tmp_path / "empty"), (str(tmp_path / "none/*/bin"),)


def test_an_explicit_pg_bin_wins_and_must_be_complete(tmp_path: Path) -> None:
    good = bindir(tmp_path / "pg16/bin")
    assert pgfind.locate(good, path=str(bindir(tmp_path / "other"))) == \
        pgfind.Install(good, "pg_bin")
    half = bindir(tmp_path / "half", ("postgres", "initdb"))
    with pytest.raises(pgfind.PostgresMissing, match=r"no pg_ctl, psql, pgbench"):
        pgfind.locate(half)


def test_path_is_followed_through_links_to_the_real_directory(tmp_path: Path) -> None:
    real = bindir(tmp_path / "opt/pg/bin")
    links = tmp_path / "links"
    links.mkdir()
    (links / "postgres").symlink_to(real / "postgres")
    _, globs = nowhere(tmp_path)
    assert pgfind.locate(path=str(links), dist_globs=globs) == pgfind.Install(real, "PATH")


def test_pg_config_names_the_directory_when_postgres_is_not_on_path(
        tmp_path: Path, replay: Replay) -> None:
    real = bindir(tmp_path / "srv/pg/bin")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "pg_config").write_text("#!/bin/sh\n")  # found on PATH; answered by the fake
    (tools / "pg_config").chmod(0o755)
    replay.add(Answer("pg_config", f"{real}\n", ("--bindir",)))
    _, globs = nowhere(tmp_path)
    found = pgfind.locate(path=str(tools), dist_globs=globs)
    assert found == pgfind.Install(real, "pg_config --bindir")


def test_distribution_directories_newest_complete_major_first(tmp_path: Path) -> None:
    debian = tmp_path / "usr/lib/postgresql"
    for major in ("9.6", "15", "17"):
        bindir(debian / major / "bin")
    bindir(debian / "18/bin", ("psql", "pgbench"))  # only the client of 18 installed
    pgdg = str(tmp_path / "usr/pgsql-*/bin")
    bindir(tmp_path / "usr/pgsql-16/bin")
    path, _ = nowhere(tmp_path)
    found = pgfind.locate(path=path, dist_globs=(str(debian / "*/bin"), pgdg))
    assert found.bindir == debian / "17/bin"
    only_pgdg = pgfind.locate(path=path, dist_globs=(str(tmp_path / "no/*/bin"), pgdg))
    assert only_pgdg == pgfind.Install(tmp_path / "usr/pgsql-16/bin", pgdg)


def test_nothing_found_names_every_place_and_how_to_install(tmp_path: Path) -> None:
    path, globs = nowhere(tmp_path)
    with pytest.raises(pgfind.PostgresMissing) as err:
        pgfind.locate(path=path, dist_globs=globs)
    text = str(err.value)
    for part in ("PATH (no postgres)", "pg_config (not on PATH)", f"{globs[0]} (none)",
                 "scripts/setup --with pgbench", "apt-get install postgresql",
                 "dnf install postgresql-server", "pg_bin"):
        assert part in text


def test_versions_and_majors() -> None:
    assert pgfind.major("16.2") == 16 and pgfind.major("18beta1") == 18
    assert pgfind.major("9.4.26") == 9 and pgfind.major("") is None
    assert pgfind.version("/nonexistent/postgres") == ""


def test_initdb_options_follow_the_major() -> None:
    assert "--no-instructions" not in postgres.initdb_args(13)
    assert "--no-instructions" in postgres.initdb_args(14)
    assert "--no-instructions" in postgres.initdb_args(18)


def _workload(**fields: object) -> dict[str, object]:
    return {"name": "p", "targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
            "workloads": [{"name": "pg", "tool": "pgbench", **fields}]}


def test_pg_bin_field_is_checked_and_separates_clusters(tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match=r"pg_bin: .*missing is not a directory"):
        parse_document(_workload(pg_bin=str(tmp_path / "missing")))
    with pytest.raises(ExperimentError, match=r"pg_bin: .* has no initdb, pg_ctl"):
        parse_document(_workload(pg_bin=str(bindir(tmp_path / "c", ("psql", "pgbench")))))
    plain = parse_document(_workload()).workloads[0]
    given = parse_document(_workload(pg_bin=str(bindir(tmp_path / "b")))).workloads[0]
    assert isinstance(plain, pgbench.PgbenchSpec) and isinstance(given, pgbench.PgbenchSpec)
    # Without pg_bin the service key is what it was before pg_bin existed.
    assert plain.cluster.key == "postgres-" + postgres.digest(dict(plain.cluster.settings))[:12]
    assert given.cluster.key != plain.cluster.key
    assert given.cluster.pg_bin == str(tmp_path / "b")


def test_compare_warns_when_the_postgresql_versions_differ() -> None:
    a = hostinfo.capture([], {"postgres": "15.18", "pgbench": "15.18"})
    b = hostinfo.capture([], {"postgres": "16.2", "pgbench": "16.2"})
    differences = {d.field: (d.a, d.b) for d in environment_differences(a, b)}
    assert differences == {"tools.postgres": ("15.18", "16.2"),
                           "tools.pgbench": ("15.18", "16.2")}
