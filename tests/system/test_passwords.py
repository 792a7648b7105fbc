"""Issue 34: no password in anything volbench prints, stores, exports or writes to a crash
file, whichever of libpq's ways it comes: URL user information with `?`, `#`, `@`,
percent-encodings and blanks, query parameters (password, sslpassword), key=value
strings (quoted, with blanks and escaped quotes), PGPASSWORD, a passfile, a service
file, and the forms libpq refuses (misspelt or upper-case schemes, bad percent-encodings,
raw blanks, a wrong password). Each form logs in (or fails) against the real PostgreSQL
the tests start (tests/pgstore.py), as a role of its own whose password is the form's."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from test_store_pg_security import FIO_JSON, everything_stored, private_file

from pgstore import PW_GROUP, PgServer
from volbench.cli.main import main

pytestmark = pytest.mark.root


@dataclass(frozen=True)
class Form:
    name: str
    password: str  # the role's password, which must never show
    db: str  # the --db value, {S} socket dir, {P} port, {D} database, {U} role
    ok: bool = True  # logs in
    env: tuple[tuple[str, str], ...] = ()  # PGPASSWORD=…, PGPASSFILE=@pgpass, …
    files: tuple[tuple[str, str], ...] = ()  # name -> text ({U} {D} {S} {P} {W})


Q = "host={S}&port={P}"
FORMS = [
    Form("url-question", "pw?Q7x-secret", "postgresql://{U}:pw?Q7x-secret@/{D}?" + Q),
    Form("url-hash-raw", "pw#x9-secret", "postgresql://{U}:pw#x9-secret@/{D}?" + Q),
    Form("url-hash-encoded", "pw#x8-secret", "postgresql://{U}:pw%23x8-secret@/{D}?" + Q),
    Form("url-at-encoded", "pw@x7-secret", "postgresql://{U}:pw%40x7-secret@/{D}?" + Q),
    Form("url-at-raw", "pwx6@secret", "postgresql://{U}:pwx6@secret@/{D}?" + Q, ok=False),
    Form("url-blank-encoded", "pw x5 secret", "postgresql://{U}:pw%20x5%20secret@/{D}?" + Q),
    Form("url-blank-raw", "pw x4 secret", "postgresql://{U}:pw x4 secret@/{D}?" + Q, ok=False),
    Form("url-percent", "pw%x3-secret", "postgresql://{U}:pw%25x3-secret@/{D}?" + Q),
    Form("url-unicode", "pwé2-sécret", "postgresql://{U}:" + quote("pwé2-sécret") + "@/{D}?" + Q),
    Form("url-slash-encoded", "pw/x1-secret", "postgresql://{U}:pw%2Fx1-secret@/{D}?" + Q),
    Form("url-colon", "pw:y9-secret", "postgresql://{U}:pw:y9-secret@/{D}?" + Q),
    Form("query-password", "pw&y8-secret",
         "postgresql://{U}@/{D}?" + Q + "&password=pw%26y8-secret"),
    Form("query-sslpassword", "pw-y7-secret",
         "postgresql://{U}:pw-y7-secret@/{D}?" + Q + "&sslpassword=Ssl-y7-secret"),
    Form("postgres-scheme", "pw-y6-secret", "postgres://{U}:pw-y6-secret@/{D}?" + Q),
    Form("keyvalue", "pw-y5-secret", "host={S} port={P} dbname={D} user={U} password=pw-y5-secret"),
    Form("keyvalue-quoted", "pw y4' secret",
         "host={S} port={P} dbname={D} user={U} password='pw y4\\' secret'"),
    Form("keyvalue-spaced", "pw-y3-secret",
         "host = {S} port = {P} dbname = {D} user = {U} password = 'pw-y3-secret'"),
    Form("pgpassword", "pw-y2-secret", "postgresql://{U}@/{D}?" + Q,
         env=(("PGPASSWORD", "pw-y2-secret"),)),
    Form("passfile", "pw:y1\\secret", "postgresql://{U}@/{D}?" + Q,
         env=(("PGPASSFILE", "@pgpass"),), files=(("pgpass", "*:*:*:{U}:pw\\:y1\\\\secret\n"),)),
    Form("passfile-keyword", "pw-z9-secret", "postgresql://{U}@/{D}?" + Q + "&passfile={W}/pgpass",
         files=(("pgpass", "*:*:*:{U}:pw-z9-secret\n"),)),
    Form("service-file", "pw-z8-secret", "postgresql:///{D}?service=vbpw",
         env=(("PGSERVICEFILE", "@services"),),
         files=(("services", "[vbpw]\nhost={S}\nport={P}\nuser={U}\npassword=pw-z8-secret\n"),)),
    Form("wrong-password", "pw-z7-right", "postgresql://{U}:pw-z7-WRONG@/{D}?" + Q, ok=False),
    Form("misspelt-scheme", "pw-z6-secret", "postgressql://{U}:pw-z6-secret@/{D}?" + Q, ok=False),
    Form("upper-scheme", "pw-z5-secret", "POSTGRESQL://{U}:pw-z5-secret@/{D}?" + Q, ok=False),
    Form("driver-scheme", "pw-z4-secret", "postgresql+psycopg://{U}:pw-z4-secret@/{D}?" + Q,
         ok=False),
    Form("bad-percent", "Pa%zz-z3-secret", "postgresql://{U}:Pa%zz-z3-secret@/{D}?" + Q, ok=False),
    Form("bad-query-percent", "pw-z2-secret",
         "postgresql://{U}:pw-z2-secret@/{D}?" + Q + "&application_name=%ff", ok=False),
    Form("db-equals-form", "pw-z1-secret", "--db=postgresql://{U}:pw-z1-secret@/{D}?" + Q),
]


@pytest.fixture
def made(pg_server: PgServer, tmp_path: Path) -> Iterator[list[tuple[str, str]]]:
    """Roles and databases the forms made (dropped at the end)."""
    done: list[tuple[str, str]] = []
    yield done
    for role, database in done:
        pg_server.admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        pg_server.admin(f'DROP ROLE IF EXISTS "{role}"')


def _role(pg_server: PgServer, password: str, made: list[tuple[str, str]]) -> tuple[str, str]:
    from psycopg import sql

    tag = uuid.uuid4().hex[:8]
    role, database = f"pw_{tag}", f"pwdb_{tag}"
    made.append((role, database))
    statement = sql.SQL("CREATE ROLE {} LOGIN IN ROLE {} PASSWORD {}").format(
        sql.Identifier(role), sql.Identifier(PW_GROUP), sql.Literal(password))
    pg_server.admin(statement.as_string(None))
    pg_server.admin(f'CREATE DATABASE "{database}" OWNER "{role}"')
    return role, database


def _secrets(form: Form) -> list[str]:
    """The password and every spelling of it the form uses."""
    words = {form.password, quote(form.password), quote(form.password, safe=""),
             "Ssl-y7-secret", "pw-z7-WRONG", "Pa%zz-z3-secret"}
    return [w for w in words if w in form.db or w == form.password]


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_no_password_anywhere(form: Form, pg_server: PgServer, tmp_path: Path,
                              made: list[tuple[str, str]], capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    role, database = _role(pg_server, form.password, made)
    values = {"S": str(pg_server.sockdir), "P": str(pg_server.port), "D": database,
              "U": role, "W": str(tmp_path)}
    for name, text in form.files:
        private_file(tmp_path / name, text.format(**values))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    for key, value in form.env:
        monkeypatch.setenv(key, str(tmp_path / value[1:]) if value.startswith("@") else value)
    state = tmp_path / "state"
    db = form.db.format(**values)
    argv = [db] if db.startswith("--db=") else ["--db", db]
    shown = ""
    for command in (["import", "--tool", "fio", "--target", "t", *argv, str(FIO_JSON)],
                    ["export", *argv, "-o", str(tmp_path / "x.ndjson")],
                    ["report", "--list", *argv], ["history", *argv]):
        try:
            code = main(command)
        except SystemExit as stop:  # argparse: a --db it cannot take
            code = int(stop.code or 0)
        out, err = capsys.readouterr()
        shown += out + err
        assert "Traceback" not in err and code in (0, 1, 2), (command, code, err)
        if form.ok:
            assert code == 0, (command, err)
        else:
            # One line, or argparse's usage and one line naming --db.
            assert (code == 1 and err.count("\n") == 1) or (code == 2 and "--db" in err), err
            break
    if form.ok:
        shown += (tmp_path / "x.ndjson").read_text()
        stored = everything_stored(pg_server, f"postgresql:///{database}")
        assert '"target": "t"' in shown or "t" in stored
        shown += stored
    shown += "".join(c.read_text() for c in state.rglob("crash-*.txt")) if state.exists() else ""
    for secret in _secrets(form):
        assert secret not in shown, (secret, shown[-3000:])


def test_a_run_given_the_issue_s_url_stores_and_prints_no_password(
        pg_server: PgServer, tmp_path: Path, workdir: Path, made: list[tuple[str, str]]) -> None:
    """The issue's `--db 'postgresql://u:pw?Q7x@/db?host=…'` on a real `volbench run`:
    before, the password was printed and stored in the run's argv."""
    import yaml

    from support import tool

    tool("fio")
    password = "pw?Q7x-run-secret"
    role, database = _role(pg_server, password, made)
    (workdir / "dir").mkdir()
    doc = {"name": "pw", "workdir": str(workdir / "work"), "repeat": 1,
           "targets": [{"name": "d", "type": "directory", "path": str(workdir / "dir")}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "bs": "4k",
                          "size": "4M", "runtime": "1s", "direct": False}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    url = (f"postgresql://{role}:{password}@/{database}?host={pg_server.sockdir}"
           f"&port={pg_server.port}")
    env = {**os.environ, "VOLBENCH_STATE_DIR": str(tmp_path / "state"), "VOLBENCH_DB": ""}
    env.pop("PGPASSWORD", None)
    done = subprocess.run([sys.executable, "-m", "volbench.cli.main", "run", "--quiet",
                           "--db", url, "e.yaml"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    stored = everything_stored(pg_server, f"postgresql:///{database}")
    assert f"postgresql://{role}:***@/{database}" in stored  # the argv, redacted
    assert password not in done.stdout + done.stderr + stored
    assert "pw?Q7x" not in stored
