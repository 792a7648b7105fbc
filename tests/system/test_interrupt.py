"""Interrupted runs through the real CLI: nothing finished is lost, nothing is left behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support import leftovers, tool

pytestmark = pytest.mark.root


def experiment(workdir: Path, repeat: int = 4) -> Path:
    doc = {
        "name": "interrupt",
        "workdir": str(workdir),
        "targets": [{"name": "a", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": 2000}},
                    {"name": "b", "type": "loopdisk", "size": "512M", "fs": "ext4"}],
        "workloads": [{"name": "r", "tool": "fio", "rw": "randread", "size": "16M",
                       "runtime": "1s"}],
        "repeat": repeat,
    }
    path = workdir / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def volbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "volbench.cli.main", *args]


def ok_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as con:
        try:
            return int(con.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def start_and_wait(file: Path, db: Path, runs: int) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(volbench("run", str(file), "--db", str(db), "--quiet"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while ok_runs(db) < runs:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "runs never appeared"
        time.sleep(0.2)
    return child


def fio_children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if "(fio)" in stat and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def test_sigterm_keeps_finished_runs_and_tears_everything_down(workdir: Path,
                                                               tmp_path: Path) -> None:
    tool("fio")
    db = tmp_path / "t.db"
    child = start_and_wait(experiment(workdir), db, runs=2)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert b"--resume" in err
    with sqlite3.connect(db) as con:
        statuses = [r[0] for r in con.execute("SELECT status FROM runs")]
        exp_status = con.execute("SELECT status FROM experiments").fetchone()[0]
    assert statuses.count("ok") >= 2
    assert set(statuses) <= {"ok", "interrupted"}
    assert exp_status == "interrupted"
    assert not leftovers(workdir)
    assert not list((tmp_path / "state" / "journals").glob("*.jsonl"))


def test_sigkill_then_cleanup_then_resume_loses_and_duplicates_nothing(workdir: Path,
                                                                      tmp_path: Path) -> None:
    tool("fio")
    db = tmp_path / "k.db"
    file = experiment(workdir, repeat=3)
    child = start_and_wait(file, db, runs=2)
    child.kill()
    child.communicate(timeout=30)
    time.sleep(0.5)
    assert not fio_children(child.pid)
    assert leftovers(workdir), "a SIGKILLed run should leave its devices for cleanup"
    with sqlite3.connect(db) as con:
        before = dict(con.execute("SELECT id, started FROM runs WHERE status = 'ok'"))

    cleaned = subprocess.run(volbench("cleanup"), capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed loop" in cleaned.stdout and "removed mount" in cleaned.stdout
    assert "removed cgroup" in cleaned.stdout
    assert not leftovers(workdir)

    resumed = subprocess.run(volbench("run", str(file), "--db", str(db), "--resume", "--quiet"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stdout
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT id, started, case_key, repetition FROM runs "
                           "WHERE status = 'ok'").fetchall()
        experiments = con.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    assert experiments == 1
    keys = [(r[2], r[3]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * 3  # 2 targets × 3 repetitions, once each
    assert {r[0]: r[1] for r in rows if r[0] in before} == before


def test_cleanup_with_nothing_left_says_so(tmp_path: Path) -> None:
    done = subprocess.run(volbench("cleanup"), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "VOLBENCH_STATE_DIR": str(tmp_path / "s")})
    assert done.returncode == 0
    assert done.stdout.strip() == "nothing left behind by volbench"
