"""Issue 25's bad inputs get one clear line, not an internal error (exit 70) or a hang:
report -o into a missing folder, --charts naming a file, a FIFO as the experiment file,
an fio import that measures nothing, hand-damaged database rows, a full disk under the
results database."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from fakeexec import Capture, Replay
from support import make_db, make_run
from volbench.cli.main import main
from volbench.store.db import Store, database_problem


@pytest.fixture
def db(tmp_path: Path) -> Path:
    runs = [make_run("a", {"iops": 100.0 + i}, i, started=1000.0 + 10 * i) for i in (1, 2, 3)]
    return make_db(tmp_path / "r.db", runs)


def test_report_into_a_missing_folder_says_so(db: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "no" / "such" / "r.md"
    assert main(["report", "--db", str(db), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (f"volbench: cannot write the report to {out}: the folder "
                           f"{out.parent} does not exist; create it (mkdir -p {out.parent}) "
                           "or give another -o")


def test_report_charts_naming_a_file_says_so(db: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "afile"
    existing.write_text("mine")
    assert main(["report", "--db", str(db), "--charts", str(existing)]) == 1
    assert f"--charts {existing} is a file, not a directory" in capsys.readouterr().err
    assert existing.read_text() == "mine"


def test_a_fifo_as_the_experiment_file_is_refused_without_waiting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "exp.yaml"
    os.mkfifo(fifo)
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(main(["plan", str(fifo)])),
                              daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the open so the test process can end
        with open(fifo, "w"):
            pass
    assert codes == [1], "volbench waited on the FIFO"
    assert f"{fifo}: is a FIFO, not an experiment file" in capsys.readouterr().err


def test_an_fio_import_without_measurements_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "j.json"
    empty.write_text(json.dumps({"jobs": [{}]}))
    target = tmp_path / "i.db"
    assert main(["import", "--tool", "fio", "--target", "t", "--db", str(target),
                 str(empty)]) == 1
    assert "it holds no measurements; is this fio output?" in capsys.readouterr().err
    with Store(target) as store:
        assert store.experiments() == []


@pytest.mark.parametrize(("table", "column"), [("runs", "params"),
                                               ("experiments", "document")])
def test_a_damaged_row_is_named_and_left_out(db: Path, capsys: pytest.CaptureFixture[str],
                                             table: str, column: str) -> None:
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE {table} SET {column} = 'a: [b' WHERE id = 1")
    assert main(["report", "--db", str(db), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out  # the report is still written
    assert (f"volbench: warning: {db}: {table} row 1: {column} is damaged (not JSON"
            in err)
    assert f"sqlite3 {db} 'DELETE FROM {table} WHERE id = 1'" in err
    with Store(db, read_only=True) as store:
        runs = store.runs([1])
    assert len(runs) == (2 if table == "runs" else 3)


def test_a_full_disk_under_the_database_is_not_called_damage(tmp_path: Path,
                                                            replay: Replay) -> None:
    # The message names the filesystem (findmnt): a captured real answer stands in for it.
    replay.add(Capture("findmnt", "findmnt/mount-json", ("--json",)))
    text = database_problem(tmp_path / "r.db",
                            sqlite3.OperationalError("database or disk is full"))
    assert text.startswith(f"no space left for the results database r.db in {tmp_path} (")
    assert "--resume" in text and "damaged" not in text
