"""Issue 25: `volbench run --resume` on a database whose experiment row was damaged by hand
names the row and completes the experiment (it was an internal error, exit 70)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from support import directory_fio_file, tool
from volbench.cli.main import main


def test_resume_with_a_damaged_experiment_document_names_the_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool("fio")
    exp = directory_fio_file(tmp_path)
    db = tmp_path / "r.db"
    assert main(["run", str(exp), "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db) as con:
        con.execute("UPDATE experiments SET document = 'a: [b' WHERE id = 1")
    capsys.readouterr()
    assert main(["run", str(exp), "--db", str(db), "--quiet", "--resume"]) == 0
    out, err = capsys.readouterr()
    assert "no runs, 1 already done" in out
    assert f"{db}: experiments row 1: document is damaged (not JSON" in err
