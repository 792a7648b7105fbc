"""Golden answer blocks of stored databases: what `volbench report` prints, exactly, and that
it fits a terminal (<= 40 lines, <= 100 columns for <= 4 targets x 2 workloads).

The databases are real: the built-in default experiment run on this machine (with the
activity each run recorded), the load-curve example, seed 001 in the lab VM, and imports of
captured real outputs (made here from tests/data). docs/report.md shows the same texts
between `<!-- answer:NAME -->` markers.

After a deliberate change of the wording or the statistics, check the diff and refresh:
    VOLBENCH_REGOLD=1 .venv/bin/python -m pytest tests/unit/test_answer_golden.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import DATA, ROOT, need
from volbench.cli.main import main
from volbench.engine.importer import import_files
from volbench.store.db import Store

REPORTS = DATA / "reports"
PG = DATA / "pgbench"
DOC = ROOT / "docs" / "report.md"
REGOLD = os.environ.get("VOLBENCH_REGOLD") == "1"
STORED = ("default-experiment", "load-curve", "lab-seed001")


def _imported(tmp_path: Path) -> Path:
    """Three imports of real pgbench outputs: 15.20 (its summary, its -P lines alone, a failed
    init), 16.2 and 18.6 (the same -c 4 -j 2 -T 3 case)."""
    db = tmp_path / "import.db"
    with Store(db) as store:
        import_files(store, "pgbench", "pg15", [
            PG / "15/run-c4-j2-T3-P1.stdout", PG / "15/run-c4-j2-T3-P1.stderr",
            PG / "15.18/error-init-primary-keys-exist.stderr"])
        import_files(store, "pgbench", "pg16", [PG / "16.2/run-c4-j2-T3-P1.stdout"])
        import_files(store, "pgbench", "pg18", [PG / "18.6/run-c4-j2-T3-P1.stdout"])
    return db


def _answer(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    if name == "import":
        db, extra = _imported(tmp_path), ["--experiment", "all"]
    else:  # a copy: the report opens read-only, but a test never touches tests/data
        db, extra = tmp_path / f"{name}.db", []
        shutil.copy(REPORTS / f"{name}.db", db)
    assert main(["report", "--db", str(db), *extra]) == 0
    return capsys.readouterr().out


def _doc_block(name: str) -> str | None:
    m = re.search(rf"<!-- answer:{re.escape(name)} -->\n```text\n(.*?)```\n", DOC.read_text(),
                  re.S)
    return m.group(1) if m else None


@pytest.mark.parametrize("name", [*STORED, "import"])
def test_the_answer_block_of_a_stored_database(name: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    if name in STORED:
        assert (REPORTS / f"{name}.db").is_file(), f"tests/data/reports/{name}.db is missing"
    text = _answer(name, tmp_path, capsys)
    golden = REPORTS / f"{name}.answer.txt"
    if REGOLD:
        golden.write_text(text)
        doc = DOC.read_text()
        block = f"<!-- answer:{name} -->\n```text\n"
        if block in doc:
            DOC.write_text(re.sub(rf"{re.escape(block)}.*?```\n", lambda _: f"{block}{text}```\n",
                                  doc, flags=re.S))
    lines = text.splitlines()
    assert len(lines) <= 40, f"{len(lines)} lines"
    assert max(len(line) for line in lines) <= 100
    assert text == golden.read_text(), "see this module's docstring to refresh"
    shown = _doc_block(name)
    assert shown is None or shown == text, "docs/report.md shows another answer"


def test_the_docs_show_the_default_experiments_answer() -> None:
    assert _doc_block("default-experiment") is not None


def test_the_terminal_at_100_columns_in_tmux(tmp_path: Path) -> None:
    """A real terminal of 100 x 40 (tmux) shows the default experiment's answer unwrapped
    and whole: every pane line is a line of the golden text."""
    need(shutil.which("tmux") is not None, "tmux is not installed (apt-get install tmux)")
    db = tmp_path / "d.db"
    shutil.copy(REPORTS / "default-experiment.db", db)
    done = tmp_path / "done"
    session = f"volbench-answer-{os.getpid()}"
    volbench = Path(sys.executable).with_name("volbench")
    command = f"{volbench} report --db {db}; touch {done}; sleep 60"
    tmux = ["tmux", "-L", session, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "100", "-y", "40",
                    "env", "TERM=xterm", "sh", "-c", command], check=True, timeout=30)
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        pane = subprocess.run([*tmux, "capture-pane", "-p", "-t", session], check=True,
                              capture_output=True, text=True, timeout=30).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)
    expected = (REPORTS / "default-experiment.answer.txt").read_text().splitlines()
    shown = [line.rstrip() for line in pane.splitlines()]
    while shown and not shown[-1]:
        shown.pop()
    assert shown == expected
