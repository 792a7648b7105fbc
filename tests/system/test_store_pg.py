"""Issue 24: the store on a real PostgreSQL server (tests/pgstore.py), side by side with
SQLite: the same calls give the same results; claims, schema, credentials and errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgstore import PASSWORD, PgServer
from support import stored_run
from volbench.core.errors import StoreError
from volbench.core.model import RunResult, Status
from volbench.store import claims, location, schema
from volbench.store.db import Store
from volbench.system import procfs

pytestmark = pytest.mark.root


def run(target: str, rep: int, *, status: Status = Status.OK, warmup: bool = False,
        note: str = "") -> RunResult:
    return stored_run(target, rep, ((1e-5, rep + 1), (2e-5, 2)), status=status,
                      warmup=warmup, note=note, start=100.25,
                      outputs={"stdout": f"raw output {rep}"})


def fill(store: Store) -> int:
    exp = store.begin_experiment("e", "h", {"name": "e"}, {"hostname": "h1"}, 1)
    store.save_target(exp, "a", "directory", "built", {"path": "/x"})
    store.save_target(exp, "b", "directory", "built", {"path": "/y"})
    for rep, kw in ((1, {}), (2, {"note": "cached"}), (0, {"warmup": True}),
                    (3, {"status": Status.FAILED})):
        store.save_run(exp, run("a", rep, **kw))  # type: ignore[arg-type]
        store.save_run(exp, run("b", rep, **kw))  # type: ignore[arg-type]
    store.set_status(exp, "done")
    return exp


def contents(store: Store, exp: int) -> dict[str, object]:
    """Everything a report reads, in comparable form."""
    row = store.experiment(exp)
    return {
        "experiment": (row.name, row.spec_hash, row.document, row.environment, row.status),
        "targets": store.targets(exp),
        "runs": [(r.target, r.repetition, r.warmup, r.status, r.metrics, r.parsed.series,
                  r.outputs, {k: v for k, v in r.annotations.items() if k != "run_id"})
                 for r in store.runs([exp], outputs=True, series=True, histograms=True)],
        "json": [{k: v for k, v in json.loads(t).items() if k != "annotations"}
                 for t in store.runs_json([exp])],
        "totals": store.histogram_totals([exp]),
        "kinds": store.metric_kinds([exp]),
        "rows": list(store.metric_rows([exp])),
        "finished": store.finished_keys(exp),
        "count": store.count_runs(exp),
    }


def test_postgresql_gives_what_sqlite_gives(tmp_path: Path, pg_url: str) -> None:
    with Store(tmp_path / "s.db") as lite, Store(location.parse(pg_url)) as pg:
        expected = contents(lite, fill(lite))
        got = contents(pg, fill(pg))
        assert got == expected
        assert [json.loads(t)["annotations"] for t in pg.runs_json([1])] == \
            [json.loads(t)["annotations"] for t in lite.runs_json([1])]
        (uuid,) = pg.db.execute("SELECT uuid FROM experiments").fetchone()
        assert len(uuid) == 36
        (version,) = pg.db.execute("SELECT version FROM schema_version").fetchone()
        assert version == schema.VERSION


def test_the_store_lives_in_its_own_schema_owned_by_an_ordinary_user(
        pg_server: PgServer, pg_url: str) -> None:
    with Store(location.parse(pg_url)) as store:
        fill(store)
        rows = store.db.execute(
            "SELECT table_schema, count(*) FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
            " GROUP BY table_schema").fetchall()
        assert len(rows) == 1 and rows[0][0] == "volbench" and rows[0][1] >= 10
        (superuser,) = store.db.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        assert superuser is False
    # A second open (another process later) finds the schema and migrates nothing.
    with Store(location.parse(pg_url)) as store:
        assert store.count_runs(1) == 8


def test_a_wrong_password_is_one_line_naming_the_host_without_the_password(
        pg_server: PgServer, pg_url: str) -> None:
    wrong = pg_url.replace(PASSWORD, "not-the-password")
    with pytest.raises(StoreError) as err:
        Store(location.parse(wrong))
    text = str(err.value)
    assert "\n" not in text and "not-the-password" not in text and PASSWORD not in text
    assert f"cannot connect to PostgreSQL at {pg_server.sockdir}/" in text
    assert "password" in text and "PGPASSWORD" in text


def test_a_refused_connection_names_the_host_and_port_fix(pg_server: PgServer,
                                                         pg_url: str) -> None:
    dead = pg_url.replace(f"port={pg_server.port}", "port=1")
    with pytest.raises(StoreError) as err:
        Store(location.parse(dead))
    assert "\n" not in str(err.value) and PASSWORD not in str(err.value)
    assert "is the server running" in str(err.value)


def test_a_missing_database_says_create_it(pg_server: PgServer) -> None:
    url = pg_server.url("postgres", "no_such_db")
    with pytest.raises(StoreError, match=r"does not exist.*create it"):
        Store(location.parse(url))


def test_a_user_without_create_permission_is_told_what_to_grant(pg_server: PgServer) -> None:
    pg_server.admin("CREATE ROLE vbreader LOGIN")
    pg_server.admin("CREATE DATABASE t_noperm OWNER postgres")
    try:
        with pytest.raises(StoreError) as err:
            Store(location.parse(pg_server.url("vbreader", "t_noperm")))
        assert "GRANT CREATE ON DATABASE t_noperm" in str(err.value)
        assert "\n" not in str(err.value)
    finally:
        pg_server.admin("DROP DATABASE t_noperm WITH (FORCE)")
        pg_server.admin("DROP ROLE vbreader")


def test_the_password_can_come_from_pgpassword(pg_server: PgServer, pg_url: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    bare = pg_url.replace(f":{PASSWORD}@", "@")
    assert PASSWORD not in bare
    with Store(location.parse(bare)) as store:
        assert store.experiments() == []


def test_claims_work_as_on_sqlite(pg_url: str, sleeper: subprocess.Popen[bytes]) -> None:
    start = procfs.start_ticks(sleeper.pid)
    assert start is not None
    live = claims.Owner(claims.me().host, claims.me().boot_id, sleeper.pid, start, time.time())
    with Store(location.parse(pg_url)) as store:
        exp = store.begin_experiment("e", "h", {}, {}, 1, claim=True)
        assert store.db.execute("SELECT pid FROM claims").fetchone() == (claims.me().pid,)
        with store.db:
            claims.insert(store.db, exp, live)
        with pytest.raises(claims.ExperimentBusy, match=f"PID {sleeper.pid}"):
            store.claim(exp)
        with store.db:
            claims.insert(store.db, exp, claims.Owner(live.host, live.boot_id, sleeper.pid,
                                                      start + 1, time.time()))
        note = store.claim(exp)
        assert note and "no longer running" in note
        store.release(exp)
        assert store.db.execute("SELECT count(*) FROM claims").fetchone() == (0,)
        # --resume of a new experiment: the second look finds the first's.
        assert store.begin_if_new("e2", "h2", {}, {}, 1) is not None
        assert store.begin_if_new("e2", "h2", {}, {}, 1) is None


def test_volbench_run_into_postgresql_stores_runs_with_their_fingerprint(
        tmp_path: Path, workdir: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from support import tool
    from volbench.cli.main import main

    tool("fio")
    target = workdir / "dir"
    target.mkdir()
    doc = {"name": "pgrun", "series": "pg-tier", "workdir": str(workdir / "work"), "repeat": 2,
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "bs": "4k",
                          "size": "4M", "runtime": "1s", "direct": False}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VOLBENCH_DB", pg_url)
    # As the shell would have it: the environment keeps argv, never the password in it.
    monkeypatch.setattr(sys, "argv", ["volbench", "run", "--db", pg_url, "e.yaml"])
    assert main(["run", "--quiet", str(tmp_path / "e.yaml")]) == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out and "results in postgresql://vbowner:***@/" in out
    assert (tmp_path / "volbench-report.md").exists()
    with Store(location.parse(pg_url)) as store:
        (exp,) = store.experiments()
        assert store.db.execute("SELECT series FROM experiments").fetchall() == [("pg-tier",)]
        assert PASSWORD not in json.dumps(exp.environment)
        assert "vbowner:***@" in " ".join(exp.environment["argv"])
        runs = store.runs([exp.id])
        assert len([r for r in runs if not r.warmup]) == 2
        prints = store.fingerprints([exp.id])
        assert len(prints) == len(runs) and len({json.dumps(p) for p in prints.values()}) == 1
        fp = next(iter(prints.values()))
        assert fp["host.kernel"] and fp["fs.type"] and fp["tool.fio"].startswith("fio-")
    assert main(["run", "--quiet", "--resume", str(tmp_path / "e.yaml")]) == 0
    assert "already done" in capsys.readouterr().out


def test_runs_json_text_is_what_sqlite_writes(tmp_path: Path, pg_url: str) -> None:
    """PostgreSQL's runs_json puts the text together in Python (quoted names cached,
    floats by repr): the same JSON as SQLite's, fields written as json.dumps does."""
    texts = []
    for where in (tmp_path / "r.db", location.parse(pg_url)):
        with Store(where) as store:
            exp = fill(store)
            store.db.execute("UPDATE runs SET started = ?, error = ? WHERE repetition = 2",
                             (1.7e9 + 0.25, 'say "hi" ü'))
            texts.append(list(store.runs_json([exp])))
    assert [json.loads(t) for t in texts[0]] == [json.loads(t) for t in texts[1]]
    assert len(texts[1]) == 8 and f'"started":{json.dumps(1.7e9 + 0.25)},' in texts[1][2]
    assert '"error":"say \\"hi\\" \\u00fc"' in texts[1][2]
