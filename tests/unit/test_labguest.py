"""The lab guest's entry point: cli/labguest.py hands lab/guest.py the CLI's main."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from volbench.cli import labguest
from volbench.lab import guest
from volbench.lab.events import PROGRESS
from volbench.system.host.hostinfo import PROGRESS_EVENTS


def test_the_guest_runs_the_cli_with_its_own_database_and_copies_it_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guest, "GUEST_WORK", tmp_path / "guest")
    out = tmp_path / "out"
    (out / ".lab").mkdir(parents=True)
    seen: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        seen.append(argv)
        # the run inside reports its progress to the host as events
        assert os.environ[PROGRESS_EVENTS] == str(out / ".lab" / PROGRESS)
        with sqlite3.connect(argv[-1]) as db:
            db.execute("create table t (x)")
        return 3

    monkeypatch.setattr(labguest.cli, "main", fake_main)
    assert labguest.main(["--outdir", str(out), "--", "run", "x.yaml"]) == 3
    assert PROGRESS_EVENTS not in os.environ  # later runs in this process draw on a terminal
    assert seen == [["run", "x.yaml", "--db", str(tmp_path / "guest" / "results.db")]]
    with sqlite3.connect(out / "results.db") as db:
        assert db.execute("select name from sqlite_master").fetchall() == [("t",)]
