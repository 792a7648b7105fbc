"""Issue 24: a URL's password is redacted wherever it sits in a text (one argv token,
a typo'd scheme, an exception's message, a crash file), scrubbed from libpq's messages
as written or percent-decoded; psycopg's connect_timeout is the URL's or the
environment's when either sets one (the PostgreSQL side: tests/system/test_store_pg_security.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.cli import crashreport
from volbench.store import location


@pytest.mark.parametrize(("text", "shown"), [
    ("--db=postgresql://u:PW@h/db", "--db=postgresql://u:***@h/db"),
    ("--to=postgres://u:PW@h:5433/db?sslmode=require", "--to=postgres://u:***@h:5433/db?sslmode=require"),
    ("postgresql+psycopg://u:PW@h/db", "postgresql+psycopg://u:***@h/db"),
    ("POSTGRESQL://u:PW@h/db", "POSTGRESQL://u:***@h/db"),
    ("x_postgres.a-b://:PW@/db?host=/s", "x_postgres.a-b://:***@/db?host=/s"),
    ("pushed to postgresql://u:PW@h/db, then postgres://v:PW@g/e",
     "pushed to postgresql://u:***@h/db, then postgres://v:***@g/e"),
    ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),  # to the last @, not libpq's first
    ("postgresql://u@/db?host=/s&PASSWORD=PW&port=5", "postgresql://u@/db?host=/s&PASSWORD=***&port=5"),
    ("host=h password=PW dbname=d", "host=h password=*** dbname=d"),
    ("postgresql://u@h/db?application_name=x", "postgresql://u@h/db?application_name=x"),
    ("postgresql://h/db?options=a@b", "postgresql://h/db?options=a@b"),  # @ past the host
])
def test_a_password_is_redacted_wherever_the_url_sits(text: str, shown: str) -> None:
    assert location.redact(text) == shown


def test_libpq_s_message_is_scrubbed_of_the_password_as_written_or_decoded() -> None:
    url = "postgresql://own:Pa%zzSECRET@/b?host=/s"
    said = 'invalid percent-encoded token: "Pa%zzSECRET"'
    assert location.scrub(said, url) == 'invalid percent-encoded token: "***"'
    url = "postgresql://own:p%40ss%2Fword@/b?host=/s&password=Q%20r"
    for secret in ("p%40ss%2Fword", "p@ss/word", "Q%20r", "Q r"):
        assert "***" in location.scrub(f"x {secret} y", url)
        assert secret not in location.scrub(f"x {secret} y", url)


def test_a_crash_file_keeps_no_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path))
    try:
        raise RuntimeError("lost postgresql://u:SECRETPW@h/db while saving")
    except RuntimeError as exc:
        line = crashreport.save(exc, ["run", "--db=postgresql://u:SECRETPW@h/db", "e.yaml"])
    (saved,) = tmp_path.glob("crash-*.txt")
    text = saved.read_text()
    assert "SECRETPW" not in text + line
    assert "command: volbench run --db=postgresql://u:***@h/db e.yaml" in text
    assert "lost postgresql://u:***@h/db while saving" in text


def test_connect_timeout_is_the_url_s_or_the_environment_s_else_ten_seconds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psycopg")
    from psycopg.conninfo import conninfo_to_dict, make_conninfo, timeout_from_conninfo

    from volbench.store import pg

    def used(url: str) -> int:
        return timeout_from_conninfo(conninfo_to_dict(make_conninfo(
            url, **pg.connect_options(url))))

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    assert used("postgresql://h/db") == 10
    assert used("postgresql://h/db?connect_timeout=45") == 45
    assert used("postgresql://h/db?sslmode=require&connect_timeout=3") == 3
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")
    assert used("postgresql://h/db") == 7
    assert used("postgresql://h/db?connect_timeout=45") == 45


def test_a_plain_argument_is_redacted_without_importing_psycopg() -> None:
    """Issue 33: `redact` runs on every argument a run records; asking libpq about a text
    with no "=" imported psycopg (~0.2 s of every `volbench run`) for nothing."""
    import subprocess
    import sys

    code = ("import sys; from volbench.store.redaction import redact; "
            "assert redact('run') == 'run' and redact('exp.yaml') == 'exp.yaml'; "
            "print('psycopg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
