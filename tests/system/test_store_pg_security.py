"""Issue 24, security on a real PostgreSQL (tests/pgstore.py): no password stored or
printed whatever way the URL is written, the grants a reader or a second writer needs
named in one line (and enough), libpq's connect_timeout, PGPASSFILE and service files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pgstore import OWNER, PASSWORD, PgServer
from volbench.cli.main import main
from volbench.store import location
from volbench.store.db import Store

pytestmark = pytest.mark.root

DATA = Path(__file__).resolve().parents[1] / "data"
FIO_JSON = DATA / "fio/3.33/randread-4k-qd16.json"


def database_of(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def everything_stored(pg_server: PgServer, url: str) -> str:
    """Every row of every table in the store, as text (read as the superuser)."""
    import psycopg

    su = pg_server.url("postgres", database_of(url))
    with psycopg.connect(su, autocommit=True) as conn:
        tables = [t for (t,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'volbench'")]
        assert "experiments" in tables and "runs" in tables
        return "\n".join(str(row[0]) for t in tables
                         for row in conn.execute(f"SELECT t::text FROM volbench.{t} t"))


def cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def import_one(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, str, str]:
    return cli(capsys, ["import", "--tool", "fio", "--target", "t", "--db", url, str(FIO_JSON)])


# -- 1. the password is never stored or printed --------------------------------------------

def test_a_run_given_db_as_one_token_stores_no_password(
        tmp_path: Path, workdir: Path, pg_server: PgServer, pg_url: str) -> None:
    import yaml

    from support import tool

    tool("fio")
    (workdir / "dir").mkdir()
    doc = {"name": "onetoken", "workdir": str(workdir / "work"), "repeat": 1,
           "targets": [{"name": "d", "type": "directory", "path": str(workdir / "dir")}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "bs": "4k",
                          "size": "4M", "runtime": "1s", "direct": False}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    state = tmp_path / "state"
    env = {**os.environ, "VOLBENCH_STATE_DIR": str(state), "VOLBENCH_DB": ""}
    env.pop("PGPASSWORD", None)
    # A real process: sys.argv as the shell gives it, `--db=URL` one token.
    proc = subprocess.run([sys.executable, "-m", "volbench.cli.main", "run", "--quiet",
                           f"--db={pg_url}", "e.yaml"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert PASSWORD not in proc.stdout + proc.stderr
    stored = everything_stored(pg_server, pg_url)
    assert PASSWORD not in stored
    assert f"--db=postgresql://{OWNER}:***@" in stored  # the argv is kept, redacted
    crashes = list(state.rglob("crash-*.txt")) if state.exists() else []
    assert all(PASSWORD not in c.read_text() for c in crashes)


@pytest.mark.parametrize("scheme", ["postgresql+psycopg", "POSTGRESQL", "postgres.x-y"])
def test_a_wrong_scheme_is_refused_without_printing_the_password(
        scheme: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["report", "--list", f"--db={scheme}://u:SECRETPW@h/db"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "unknown scheme" in err
    assert "SECRETPW" not in err and f"{scheme}://u:***@h/db" in err


def test_a_badly_percent_encoded_password_is_not_echoed(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """libpq cannot read it: refused as --db is read (issue 34: with libpq's own words),
    without the password libpq quotes."""
    bad = pg_url.replace(f":{PASSWORD}@", ":Pa%zzSECRET@")
    for given in (bad, bad.replace("%zz", "%00")):
        with pytest.raises(SystemExit) as stop:
            main(["report", "--list", "--db", given])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and "percent-encoded" in err, err
        assert "SECRET" not in err and "Pa%zz" not in err


# -- 2. the grants a reader or a second writer needs ------------------------------------------

def named_grants(message: str) -> list[str]:
    """The GRANT statements a one-line message names."""
    return re.findall(r"GRANT [^;]+;", message)


def grant_as_owner(pg_url: str, statements: list[str]) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())


@pytest.fixture
def role(pg_server: PgServer, pg_url: str) -> Iterator[str]:
    """A second login role (no password: trust on the socket), dropped afterwards."""
    import psycopg

    name = f"r_{database_of(pg_url)}"
    pg_server.admin(f"CREATE ROLE {name} LOGIN")
    yield name
    # Its grants live in this test's database: dropped there, then the role.
    with psycopg.connect(pg_server.url("postgres", database_of(pg_url)),
                         autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {name}".encode())
    pg_server.admin(f"DROP ROLE {name}")


def test_a_read_only_role_reports_from_a_store_another_role_made(
        pg_server: PgServer, pg_url: str, role: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert import_one(capsys, pg_url)[0] == 0
    reader = pg_server.url(role, database_of(pg_url))
    code, out, err = cli(capsys, ["report", "--list", "--db", reader])
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"refused role {role}: permission denied for schema volbench" in err
    assert f"to read the store, run as {OWNER}:" in err
    # Exactly what docs/store.md prescribes for a dashboard, and enough.
    assert named_grants(err) == [f"GRANT USAGE ON SCHEMA volbench TO {role};",
                                 f"GRANT SELECT ON ALL TABLES IN SCHEMA volbench TO {role};"]
    grant_as_owner(pg_url, named_grants(err))
    for argv in (["report", "--list"], ["report", "--format", "json"], ["history"],
                 ["export"]):
        code, out, err = cli(capsys, [*argv, "--db", reader])
        assert code == 0 and err == "", (argv, err)
        assert out.strip()
    assert "1 experiment" in cli(capsys, ["history", "--db", reader])[1]


def test_a_second_writer_without_schema_rights_is_told_the_grants(
        pg_server: PgServer, pg_url: str, role: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert import_one(capsys, pg_url)[0] == 0
    db = database_of(pg_url)
    pg_server.admin(f"GRANT CREATE, CONNECT ON DATABASE {db} TO {role}")
    writer = pg_server.url(role, db)
    code, out, err = import_one(capsys, writer)
    assert code == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"volbench: PostgreSQL at {pg_server.sockdir}/{db} refused role "
                          f"{role}: permission denied for schema volbench; to write to the "
                          f"store, run as {OWNER}: ")
    assert named_grants(err) == [
        f"GRANT USAGE, CREATE ON SCHEMA volbench TO {role};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA volbench TO {role};",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA volbench TO {role};"]
    grant_as_owner(pg_url, named_grants(err))
    code, out, err = import_one(capsys, writer)
    assert code == 0 and "imported 1 run(s)" in out, err
    with Store(location.parse(pg_url)) as store:
        assert len(store.experiments()) == 2


def test_no_schema_selected_is_one_line_naming_the_writer_grants(
        pg_server: PgServer, pg_url: str, role: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The owner made the schema but no tables yet: the second writer may not create
    # them there ("no schema has been selected to create in").
    with Store(location.parse(pg_url)):
        pass
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE volbench.schema_version")
    db = database_of(pg_url)
    pg_server.admin(f"GRANT CREATE, CONNECT ON DATABASE {db} TO {role}")
    code, _out, err = import_one(capsys, pg_server.url(role, db))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "no schema has been selected to create in" in err
    assert f"GRANT USAGE, CREATE ON SCHEMA volbench TO {role};" in err


# -- 3. connect_timeout from the URL --------------------------------------------------------

def test_the_url_s_connect_timeout_is_the_one_used(pg_url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    with Store(location.parse(pg_url + "&connect_timeout=3")) as store:
        assert store.db.execute("SELECT 1").fetchone() == (1,)
        used = {o.keyword: o.val for o in store.db.conn.pgconn.info}
        assert used[b"connect_timeout"] == b"3"
    with Store(location.parse(pg_url)) as store:
        used = {o.keyword: o.val for o in store.db.conn.pgconn.info}
        assert used[b"connect_timeout"] == b"10"  # volbench's default
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")
    with Store(location.parse(pg_url)) as store:
        used = {o.keyword: o.val for o in store.db.conn.pgconn.info}
        assert used[b"connect_timeout"] == b"7"


# -- 4. the password from PGPASSFILE or a service file ------------------------------------

def private_file(path: Path, text: str) -> Path:
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)
    return path


def test_the_password_can_come_from_pgpassfile(
        tmp_path: Path, pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(private_file(
        tmp_path / "pgpass", f"*:*:*:{OWNER}:{PASSWORD}\n")))
    bare = pg_url.replace(f":{PASSWORD}@", "@")
    code, out, err = import_one(capsys, bare)
    assert code == 0, err
    assert PASSWORD not in out + err + everything_stored(pg_server, pg_url)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))  # and it was the file
    code, out, err = import_one(capsys, bare)
    assert code == 1 and "password" in err


def test_the_password_can_come_from_a_service_file(
        tmp_path: Path, pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("PGSERVICEFILE", str(private_file(tmp_path / "services", (
        f"[vbstore]\nhost={pg_server.sockdir}\nport={pg_server.port}\n"
        f"dbname={database_of(pg_url)}\nuser={OWNER}\npassword={PASSWORD}\n"))))
    for url in ("postgresql://?service=vbstore",
                f"postgresql:///{database_of(pg_url)}?service=vbstore"):
        code, out, err = import_one(capsys, url)
        assert code == 0, err
        assert PASSWORD not in out + err
    assert PASSWORD not in everything_stored(pg_server, pg_url)
    with Store(location.parse(pg_url)) as store:
        assert len(store.experiments()) == 2


def test_a_reader_of_an_older_store_is_told_its_owner_must_upgrade_it(
        pg_server: PgServer, pg_url: str, role: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    from volbench.store.schema import VERSION

    assert import_one(capsys, pg_url)[0] == 0
    reader = pg_server.url(role, database_of(pg_url))
    grant_as_owner(pg_url, [f"GRANT USAGE ON SCHEMA volbench TO {role};",
                            f"GRANT SELECT ON ALL TABLES IN SCHEMA volbench TO {role};"])
    set_version = "UPDATE volbench.schema_version SET version = {};"
    grant_as_owner(pg_url, [set_version.format(VERSION - 1)])  # as an older volbench left it
    code, _out, err = cli(capsys, ["report", "--list", "--db", reader])
    assert code == 1 and err.count("\n") == 1 and "GRANT" not in err, err
    assert f"has schema {VERSION - 1}, older than this volbench's ({VERSION})" in err
    assert f"its owner ({OWNER}) must upgrade it" in err
    grant_as_owner(pg_url, [set_version.format(VERSION)])
    assert cli(capsys, ["report", "--list", "--db", reader])[0] == 0


def test_reading_a_database_with_no_store_says_so_and_makes_nothing(
        pg_server: PgServer, pg_url: str, role: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    reader = pg_server.url(role, database_of(pg_url))
    for url in (pg_url, reader):  # the owner too: reading makes no schema
        for argv in (["report", "--list"], ["history"], ["export"]):
            code, _out, err = cli(capsys, [*argv, "--db", url])
            assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
            assert "no volbench results in PostgreSQL at" in err and "GRANT" not in err
            assert "volbench run FILE --db URL" in err and PASSWORD not in err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'volbench'"
                            ).fetchone() == (0,)
        conn.execute("CREATE SCHEMA volbench")  # made, but no tables yet: still nothing
    code, _out, err = cli(capsys, ["report", "--list", "--db", pg_url])
    assert code == 1 and "no volbench results in PostgreSQL at" in err, err
