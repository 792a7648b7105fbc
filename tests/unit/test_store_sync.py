"""Issue 24: --db locations (files, URLs, VOLBENCH_DB, redaction), push/pull by UUID and
export as ndjson, between SQLite files (the PostgreSQL side: tests/system/test_store_pg*.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import make_run
from volbench.cli import storecmds
from volbench.cli.main import main
from volbench.core.model import Histogram, Parsed
from volbench.store import location, sync
from volbench.store.db import Store


def test_a_url_is_a_pg_location_and_prints_without_its_password() -> None:
    loc = location.parse("postgresql://team:hunter2@db.example:5433/bench?sslmode=require")
    assert isinstance(loc, location.PgLocation)
    assert loc.url.endswith("sslmode=require")  # libpq options pass through untouched
    assert (loc.host, loc.database) == ("db.example", "bench")
    assert str(loc) == "postgresql://team:***@db.example:5433/bench?sslmode=require"
    assert "hunter2" not in repr(loc) and "hunter2" not in f"{loc}"
    assert location.redact("postgres://u@h/d?password=x&sslmode=disable") == \
        "postgres://u@h/d?password=***&sslmode=disable"
    assert location.parse("results.db") == Path("results.db")


def test_bad_urls_say_what_to_write() -> None:
    with pytest.raises(location.LocationError, match=r"unknown scheme.*postgresql://"):
        location.parse("mysql://u:pw@h/d")
    with pytest.raises(location.LocationError, match="no database name") as err:
        location.parse("postgresql://u:pw@h")
    assert "pw" not in str(err.value).replace("postgresql", "")


def test_volbench_db_is_the_default_of_db(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    monkeypatch.setenv("VOLBENCH_DB", str(tmp_path / "env.db"))
    fill(tmp_path / "env.db", "from-env", 2)
    assert main(["report", "--list"]) == 0
    assert "from-env" in capsys.readouterr().out
    monkeypatch.setenv("VOLBENCH_DB", "oracle://x/y")
    with pytest.raises(SystemExit):
        main(["report", "--list"])
    assert "unknown scheme" in capsys.readouterr().err


def fill(path: Path, name: str, runs: int, *, start: int = 0,
         kernel: str | None = None) -> int:
    """An experiment of `runs` runs; with `kernel`, the runs' fingerprint names it."""
    with Store(path) as store:
        exp = store.begin_experiment(name, f"h-{name}", {"name": name},
                                     {"hostname": "host-a", "kernel": "6.1"}, 1)
        store.save_target(exp, "t", "directory", "built", {"path": "/x"})
        prints = {"host.kernel": kernel, "fs.type": "xfs"} if kernel else {}
        digest = store.save_fingerprint(prints, f"fp-{kernel}") if kernel else ""
        for rep in range(start, start + runs):
            hist = Parsed(histograms=(Histogram("clat", "s", ((1e-5, rep + 1),), {}),))
            store.save_run(exp, make_run("t", {"iops": 100.0 + rep}, rep, started=10.0 + rep,
                                         parsed_extra=hist), fingerprint=digest)
        store.set_status(exp, "done")
        return exp


def contents(path: Path) -> list[tuple[object, ...]]:
    with Store(path, read_only=True) as store:
        out = []
        for e in store.experiments():
            uuid = store.db.execute("SELECT uuid FROM experiments WHERE id = ?",
                                    (e.id,)).fetchone()[0]
            runs = sorted((r.repetition, r.metrics) for r in store.runs([e.id]))
            out.append((uuid, e.name, e.status, runs, store.targets(e.id)[0].info,
                        store.histogram_totals([e.id])))
        return out


def test_push_copies_by_uuid_so_twice_adds_nothing(tmp_path: Path) -> None:
    src, dst = tmp_path / "a.db", tmp_path / "team.db"
    fill(src, "one", 3)
    fill(src, "two", 2)
    fill(dst, "one", 1)  # a same-named experiment of another host stays apart
    with Store(src) as a, Store(dst) as b:
        first = sync.copy(a, b)
        again = sync.copy(a, b)
    assert (first.experiments, first.runs) == (2, 5)
    assert (again.experiments, again.runs) == (0, 0)
    pushed = contents(dst)
    assert len(pushed) == 3 and pushed[1:] == contents(src)


def test_an_experiment_that_grew_gets_only_its_new_runs(tmp_path: Path) -> None:
    src, dst = tmp_path / "a.db", tmp_path / "team.db"
    exp = fill(src, "one", 2)
    with Store(src) as a, Store(dst) as b:
        sync.copy(a, b)
    with Store(src) as a:
        a.save_run(exp, make_run("t", {"iops": 7.0}, 9, started=99.0))
    with Store(src) as a, Store(dst) as b:
        assert sync.copy(a, b).runs == 1
    assert contents(dst) == contents(src)


def test_push_and_pull_on_the_command_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src, team, back = tmp_path / "a.db", tmp_path / "team.db", tmp_path / "b.db"
    fill(src, "one", 2)
    assert main(["push", str(src), "--to", str(team)]) == 0
    assert "1 new experiment(s), 2 new run(s)" in capsys.readouterr().out
    assert main(["push", str(src), "--to", str(team)]) == 0
    assert "0 new experiment(s), 0 new run(s)" in capsys.readouterr().out
    assert main(["pull", str(team), "--to", str(back), "--experiment", "one"]) == 0
    assert contents(back) == contents(src)
    assert main(["push", str(src), "--to", str(src)]) == 1
    assert "is where the experiments come from" in capsys.readouterr().err


def test_export_writes_one_run_per_line_with_experiment_and_environment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "a.db"
    fill(db, "one", 2)
    fill(db, "two", 1)
    with Store(db, read_only=True) as store:
        lines = list(storecmds.export_lines(store, None))
    docs = [json.loads(line) for line in lines]
    assert [d["experiment"]["name"] for d in docs] == ["one", "one", "two"]
    assert docs[0]["environment"] == {"hostname": "host-a", "kernel": "6.1"}
    assert docs[0]["experiment"]["host"] == "host-a" and len(docs[0]["experiment"]["id"]) == 36
    assert docs[1]["metrics"] == [{"name": "iops", "value": 101.0, "unit": "op/s",
                                   "tags": {"op": "read"}}]
    assert main(["export", "--db", str(db), "--experiment", "two",
                 "-o", str(tmp_path / "x.ndjson")]) == 0
    assert "wrote 1 run(s)" in capsys.readouterr().out
    assert json.loads((tmp_path / "x.ndjson").read_text())["repetition"] == 0


def test_export_gives_each_run_its_own_fingerprint(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    fill(db, "one", 2, kernel="6.1")
    fill(db, "two", 1, kernel="6.12")
    fill(db, "none", 1)  # stored without one (imported, older stores): null
    with Store(db) as store:  # a run of "one" on another kernel
        digest = store.save_fingerprint({"host.kernel": "6.13"}, "fp-6.13")
        store.save_run(1, make_run("t", {"iops": 1.0}, 9, started=1.0), fingerprint=digest)
    with Store(db, read_only=True) as store:
        docs = [json.loads(line) for line in storecmds.export_lines(store, None)]
    assert [(d["experiment"]["name"], d["repetition"], d["fingerprint"]) for d in docs] == [
        ("one", 0, {"fs.type": "xfs", "host.kernel": "6.1"}),
        ("one", 1, {"fs.type": "xfs", "host.kernel": "6.1"}),
        ("one", 9, {"host.kernel": "6.13"}),
        ("two", 0, {"fs.type": "xfs", "host.kernel": "6.12"}),
        ("none", 0, None)]
    assert docs[0]["environment"] == {"hostname": "host-a", "kernel": "6.1"}


def test_a_crash_report_keeps_the_command_without_the_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.cli import crashreport

    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path))
    line = crashreport.save(RuntimeError("boom"), ["push", "a.db", "--to",
                                                   "postgresql://me:hunter2@db1/bench"])
    (saved,) = tmp_path.glob("crash-*.txt")
    assert str(saved) in line
    text = saved.read_text()
    assert "postgresql://me:***@db1/bench" in text and "hunter2" not in text


def test_compare_output_names_the_fingerprint_fields_that_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, same = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    fill(a, "one", 3, kernel="6.1")
    fill(b, "one", 3, kernel="6.12")
    fill(same, "one", 3, kernel="6.1")
    line = "environment differs: host.kernel 6.1 → 6.12 (A → B)"
    md = tmp_path / "cmp.md"
    assert main(["compare", str(a), str(b), "--format", "markdown", "-o", str(md)]) == 0
    assert f"- {line}" in md.read_text()  # under ## Warnings, in the file itself
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fingerprint_differences"] == [{"field": "host.kernel", "a": "6.1",
                                               "b": "6.12"}]
    assert any(w.startswith(line) for w in doc["warnings"])
    assert main(["compare", str(a), str(b)]) == 0
    assert line in capsys.readouterr().out
    assert main(["compare", str(a), str(same), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fingerprint_differences"] == []
    assert not any("environment differs" in w for w in doc["warnings"])


def test_a_report_of_experiments_in_different_environments_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    fill(db, "one", 3, kernel="6.1")
    fill(db, "two", 3, kernel="6.1")
    fill(db, "three", 3, kernel="6.12")
    line = "environment differs: host.kernel 6.1 → 6.12"
    for fmt in ("markdown", "json", "table"):
        assert main(["report", "--db", str(db), "--experiment", "all", "--format", fmt]) == 0
        out = capsys.readouterr().out
        if fmt == "json":
            out = " ".join(w["message"] for w in json.loads(out)["warnings"])
        assert line in out, fmt  # markdown: in its answer and its warnings
    assert main(["report", "--db", str(db), "--experiment", "one", "--experiment", "two",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not any(w["kind"] == "environment" for w in doc["warnings"])
    assert main(["report", "--db", str(db), "--experiment", "three"]) == 0
    assert "environment differs" not in capsys.readouterr().out
