"""The results store: schema migrations, per-case histogram totals, fast report reads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from support import stored_run
from volbench.core.errors import StoreError
from volbench.core.model import Status
from volbench.store import schema
from volbench.store.db import Store


def filled(path: Path) -> int:
    with Store(path) as store:
        exp = store.begin_experiment("e", "h", {"name": "e"}, {}, 1)
        store.save_run(exp, stored_run("a", 1, ((1e-5, 3), (2e-5, 1))))
        store.save_run(exp, stored_run("a", 2, ((2e-5, 2), (4e-5, 5)), note="cached"))
        store.save_run(exp, stored_run("a", 0, ((9.0, 100),), warmup=True))
        store.save_run(exp, stored_run("a", 3, ((9.0, 100),), status=Status.FAILED))
        return exp


def test_histograms_are_summed_per_case_over_measured_runs_only(tmp_path: Path) -> None:
    exp = filled(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as store:
        (total,) = store.histogram_totals([exp])
    assert total.runs == 2
    assert total.bins == ((1e-5, 3), (2e-5, 3), (4e-5, 5))
    assert (total.target, total.name, dict(total.tags)) == ("a", "clat", {"op": "read"})


def test_runs_json_written_by_sqlite_matches_the_python_objects(tmp_path: Path) -> None:
    exp = filled(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as store:
        fast = [json.loads(text) for text in store.runs_json([exp])]
        runs = store.runs([exp])
    assert len(fast) == len(runs) == 4
    for doc, r in zip(fast, runs, strict=True):
        assert doc["target"] == r.target and doc["params"] == dict(r.params)
        assert doc["warmup"] is r.warmup and doc["status"] == str(r.status)
        assert doc["argv"] == list(r.argv) and doc["annotations"] == dict(r.annotations)
        assert doc["metrics"] == [m.to_json() for m in r.metrics]


def test_reading_only_some_metrics(tmp_path: Path) -> None:
    exp = filled(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as store:
        runs = store.runs([exp], metric_names={"iops"}, series=True)
        kinds = store.metric_kinds([exp])
        rows = list(store.metric_rows([exp]))
    assert {m.name for r in runs for m in r.metrics} == {"iops"}
    assert runs[1].parsed.series[0].points == ((1.0, 990.0), (2.0, 1012.0))
    assert kinds == {("iops", "op/s"), ("io_bytes", "B")}
    assert [(r[3], r[4], r[8]) for r in rows] == [(1, "iops", ""), (1, "io_bytes", ""),
                                                 (2, "iops", ""), (2, "io_bytes", "cached")]


def test_a_version_1_database_is_migrated_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(schema.V1)
        db.execute("PRAGMA user_version = 1")
        db.execute("INSERT INTO experiments VALUES (1, 'e', 'h', '{}', '{}', 1, 0, NULL, 'done')")
        for rid, rep, status, bins in ((1, 1, "ok", [[1e-5, 2]]), (2, 2, "ok", [[1e-5, 1]]),
                                        (3, 3, "failed", [[5e-5, 9]])):
            db.execute("INSERT INTO runs VALUES (?, 1, 'a', 'w', '{\"rw\":\"read\"}', 'k', ?, 0,"
                       " ?, 0, 1, '[]', 0, '', '{}')", (rid, rep, status))
            db.execute("INSERT INTO metrics VALUES (?, 'iops', 5.0, 'op/s', '{}', '')", (rid,))
            db.execute("INSERT INTO histograms VALUES (?, 'clat', 's', '{\"op\":\"read\"}', ?)",
                       (rid, json.dumps(bins)))
        db.execute("INSERT INTO series VALUES (7, 1, 'iops', 'op/s', '{}')")
        db.executemany("INSERT INTO series_points VALUES (7, ?, ?)", [(2.0, 20.0), (1.0, 10.0)])
    with Store(path) as store:
        (total,) = store.histogram_totals([1])
        runs = store.runs([1], series=True)
        kinds = store.metric_kinds([1])
        exported = list(store.runs_json([1]))
        version = store.db.execute("PRAGMA user_version").fetchone()[0]
        keyed = store.db.execute("SELECT DISTINCT experiment, series, n FROM case_summary"
                                 ).fetchall()
    assert version == schema.VERSION == 7
    assert keyed == [("e", "", 2)]  # the views, made at v5, carry v6's series from v7
    assert total.runs == 2 and total.bins == ((1e-5, 3),)
    assert runs[0].parsed.series[0].points == ((1.0, 10.0), (2.0, 20.0))
    assert kinds == {("iops", "op/s")}
    assert [json.loads(t)["metrics"] for t in exported] == [
        [{"name": "iops", "value": 5.0, "unit": "op/s", "tags": {}}]] * 3


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(schema.V1)
        db.execute("PRAGMA user_version = 1")

    def broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("disk full")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema.V1, broken])
    with pytest.raises(RuntimeError):
        Store(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in tables and "series_points" in tables


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this volbench"):
        Store(path)


def test_something_else_is_not_a_volbench_database(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_text("not sqlite at all, just text " * 100)
    with pytest.raises(StoreError, match="is not a volbench database"):
        Store(path)


def test_runs_kept_for_a_report_are_out_of_the_collector_s_sight(tmp_path: Path) -> None:
    """store.runs(kept=True) freezes what it built (gc.freeze): a report's full
    collections do not walk 100 000 runs' objects again and again (bench/store.py
    measures the gain); without `kept` (the runner's rounds) nothing is frozen."""
    import gc

    exp = filled(tmp_path / "r.db")
    gc.unfreeze()
    try:
        with Store(tmp_path / "r.db") as store:
            assert len(store.runs([exp], series=True)) == 4
            assert gc.get_freeze_count() == 0
            runs = store.runs([exp], series=True, kept=True)
        assert gc.get_freeze_count() > 0 and len(runs) == 4
    finally:
        gc.unfreeze()
