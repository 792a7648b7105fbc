"""`volbench cleanup --db`: a killed run's claim in an SQLite store is released and its
experiment marked interrupted; live and other hosts' claims stay (claims.clear_dead)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support import make_run
from volbench.cli import storecmds
from volbench.cli.main import main
from volbench.core.errors import VolbenchError
from volbench.store import claims, location
from volbench.store.db import Store


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def claimed(path: Path) -> list[int]:
    mine = claims.me()
    with Store(path) as store:
        ids = [store.begin_experiment(f"e{i}", f"h{i}", {}, {}, 1) for i in range(3)]
        with store.db:
            claims.insert(store.db, ids[0], claims.Owner(mine.host, mine.boot_id, dead_pid(),
                                                         1, mine.since))
            claims.insert(store.db, ids[1], claims.Owner("elsewhere", "b", 42, 1, mine.since))
            claims.insert(store.db, ids[2], mine)
    return ids


def test_cleanup_db_releases_only_dead_local_claims(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    ids = claimed(db)
    removed, notes = storecmds.cleanup_store(db)
    assert [f"experiment {ids[0]} (e0)" in line for line in removed] == [True]
    assert len(notes) == 1 and "(e1)" in notes[0] and "--take-over" in notes[0]
    with Store(db) as store:
        left = {r[0] for r in store.db.execute("SELECT experiment_id FROM claims")}
        status = [r.status for r in store.experiments()]
        finished = store.experiment(ids[0]).finished
    assert left == {ids[1], ids[2]} and status == ["interrupted", "running", "running"]
    assert finished is not None
    assert storecmds.cleanup_store(db)[0] == []


def test_cleanup_without_db_leaves_stores_alone(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(location.ENV, raising=False)
    assert storecmds.cleanup_store(None) == ([], [])
    db = tmp_path / "r.db"
    claimed(db)
    monkeypatch.setenv(location.ENV, str(db))
    monkeypatch.setattr("volbench.engine.kinds.cleanup", lambda: ([], []))
    assert main(["cleanup"]) == 0  # VOLBENCH_DB is the default of --db
    with Store(db) as store:
        assert store.experiment(1).status == "interrupted"


def test_cleanup_of_a_missing_database_names_it(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("volbench.engine.kinds.cleanup", lambda: ([], []))
    assert main(["cleanup", "--db", str(tmp_path / "none.db")]) != 0
    assert f"no results database at {tmp_path / 'none.db'}" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_lab_results_that_cannot_reach_the_url_are_kept_and_named(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    # A URL nobody answers at (a socket folder that does not exist): the copy fails.
    dead = location.parse(f"postgresql://me:s3cret@/bench?host={tmp_path / 'none'}&port=1")
    results = storecmds.LabResults(dead, tmp_path)
    with Store(results.file) as store:  # what the guest brought back
        exp = store.begin_experiment("labpg", "h", {}, {}, 1)
        for rep in range(3):
            store.save_run(exp, make_run("t", {"iops": 1.0}, rep, started=float(rep)))
    with pytest.raises(VolbenchError, match="kept in") as err, results:
        results.bring_in()
    assert str(results.file) in str(err.value) and "volbench push" in str(err.value)
    assert "s3cret" not in str(err.value)
    assert results.file.exists()
    with Store(results.file) as store:
        assert store.count_runs(1) == 3
