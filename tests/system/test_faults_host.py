"""Faults on the host, through the real CLI: a throttled loop disk slowed for a while
(ground truth: its class's cap), and a fault that never outlives its run, whatever kills it."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import leftovers, tool

pytestmark = pytest.mark.root
CAP = 500


def experiment(workdir: Path, runtime: str, fault: dict[str, Any]) -> Path:
    doc = {
        "name": "faults-host",
        "workdir": str(workdir),
        "targets": [{"name": "std", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": CAP, "write_iops": CAP}}],
        "workloads": [{"name": "r", "tool": "fio", "rw": "randread", "bs": "4k",
                       "iodepth": 16, "size": "32M", "runtime": runtime,
                       "faults": [fault]}],
        "repeat": 1,
    }
    path = workdir / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def volbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "volbench.cli.main", *args]


def metrics(db: Path) -> dict[tuple[str, str], float]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT name, tags, value FROM metrics").fetchall()
    return {(name, json.loads(tags).get("phase", "")): value for name, tags, value in rows}


@pytest.mark.slow
def test_a_slowed_loop_disk_shows_its_cap_per_phase(workdir: Path, tmp_path: Path) -> None:
    tool("fio")
    db = tmp_path / "f.db"
    file = experiment(workdir, "13s", {"at": "4s", "action": "slow", "target": "std",
                                       "for": "4s", "percent": 20})
    done = subprocess.run(volbench("run", str(file), "--db", str(db), "--quiet"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = metrics(db)
    assert got[("iops", "before")] == pytest.approx(CAP, rel=0.1)
    assert got[("iops", "slow")] == pytest.approx(CAP * 0.2, rel=0.15)
    assert got[("iops", "after")] == pytest.approx(CAP, rel=0.1)
    assert got[("stall_seconds", "")] == 0.0
    assert 0.0 <= got[("recovery_seconds", "")] < 2.0
    with sqlite3.connect(db) as con:
        notes = json.loads(con.execute("SELECT annotations FROM runs").fetchone()[0])
    events = notes["faults"]["events"]
    assert [(e["action"], e["phase"], e["asked_s"]) for e in events] == [
        ("slow", "slow", 4.0), ("return", "after", 8.0)]
    assert all(c["returncode"] == 0 for e in events for c in e["commands"])
    assert events[0]["commands"][0]["command"].endswith(
        f" {CAP // 5} > " + events[0]["commands"][0]["command"].split(" > ")[1])
    assert 0.0 < notes["faults"]["tool_offset_s"] < 5.0
    assert not leftovers(workdir)


@pytest.mark.slow
def test_a_fault_that_lasts_to_the_end_is_a_phase_not_a_burst(workdir: Path,
                                                              tmp_path: Path) -> None:
    # 5 s at the cap, then 20 % of it to the end: the burst detector alone reads "a 5 s
    # burst, then a sustained 100 IOPS" and the report would judge the run on the fault.
    tool("fio")
    db = tmp_path / "f.db"
    file = experiment(workdir, "13s", {"at": "5s", "action": "slow", "target": "std",
                                       "percent": 20})
    done = subprocess.run(volbench("run", str(file), "--db", str(db), "--quiet"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = metrics(db)
    assert got[("iops", "slow")] == pytest.approx(CAP * 0.2, rel=0.15)
    assert not {name for name, _ in got} & {"burst_seconds", "warmup_seconds"}
    assert not leftovers(workdir)


def journal_kinds(state: Path) -> list[str]:
    kinds = []
    for path in (state / "journals").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("op") == "add":
                kinds.append(rec["kind"])
    return kinds


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_fault_never_outlives_its_run(workdir: Path, tmp_path: Path, how: signal.Signals,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed at a random moment while the disk is slowed: teardown (SIGTERM) or
    `volbench cleanup` (SIGKILL) undoes the fault before removing the disk."""
    tool("fio")
    state = tmp_path / "state"
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(state))
    file = experiment(workdir, "30s", {"at": "1s", "action": "slow", "target": "std",
                                       "for": "20s"})
    child = subprocess.Popen(volbench("run", str(file), "--db", str(tmp_path / "k.db"),
                                      "--quiet"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while "fault-throttle" not in journal_kinds(state):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the fault never fired"
        time.sleep(0.1)
    time.sleep(random.Random(f"faults-{how}").uniform(0.0, 3.0))
    child.send_signal(how)
    child.communicate(timeout=120)
    if how == signal.SIGKILL:
        time.sleep(0.5)
        assert leftovers(workdir), "a SIGKILLed run leaves its disk for cleanup"
        cleaned = subprocess.run(volbench("cleanup"), capture_output=True, text=True,
                                 timeout=120)
        assert cleaned.returncode == 0, cleaned.stderr
        assert "removed fault-throttle" in cleaned.stdout
    assert not leftovers(workdir)
    assert not list((state / "journals").glob("*.jsonl"))
