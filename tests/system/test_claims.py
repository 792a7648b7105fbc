"""Issue 12 §3: one writer per experiment, with real concurrent volbench processes (the
--resume races on SQLite and on a real PostgreSQL server, issue 24)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bounds import within
from support import ROOT, tool
from volbench.core.model import RunResult
from volbench.store import claims, location
from volbench.store.db import Store
from volbench.system import procfs

RUN = [sys.executable, "-m", "volbench.cli.main", "run", "--quiet"]


def owner_of(p: subprocess.Popen[bytes], **changes: object) -> claims.Owner:
    pid_start = procfs.start_ticks(p.pid)
    assert pid_start is not None
    values = {"host": claims.me().host, "boot_id": claims.me().boot_id, "pid": p.pid,
              "pid_start": pid_start, "since": time.time(), **changes}
    return claims.Owner(**values)  # type: ignore[arg-type]


def new_experiment(db: Path) -> int:
    with Store(db) as store:
        eid = store.begin_experiment("e", "hash", {}, {}, 1, claim=True)
        assert store.db.execute("SELECT pid FROM claims").fetchone() == (os.getpid(),)
        store.release(eid)
        assert store.db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)
    return eid


def test_a_live_owner_is_named_and_the_second_writer_refused(tmp_path: Path,
                                                            sleeper: subprocess.Popen[bytes]
                                                            ) -> None:
    db = tmp_path / "r.db"
    eid = new_experiment(db)
    with Store(db) as store:
        with store.db:
            claims.insert(store.db, eid, owner_of(sleeper))
        with pytest.raises(claims.ExperimentBusy) as err:
            store.claim(eid)
    assert f"experiment {eid} (e) in {db} is being run by PID {sleeper.pid} on " in str(err.value)
    assert "wait for it to finish, or stop it" in str(err.value)


def test_a_dead_owner_s_claim_is_taken_over(tmp_path: Path,
                                            sleeper: subprocess.Popen[bytes]) -> None:
    db = tmp_path / "r.db"
    eid = new_experiment(db)
    # The same PID started at another moment is another process (PID reuse); a claim
    # from before a reboot is dead too.
    for dead in (owner_of(sleeper, pid_start=1), owner_of(sleeper, boot_id="gone")):
        with Store(db) as store:
            with store.db:
                claims.insert(store.db, eid, dead)
            note = store.claim(eid)
            assert note and f"from PID {sleeper.pid}" in note and "no longer running" in note
            store.release(eid)
            assert store.db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_an_owner_on_another_host_needs_take_over(tmp_path: Path,
                                                  sleeper: subprocess.Popen[bytes]) -> None:
    db = tmp_path / "r.db"
    eid = new_experiment(db)
    with Store(db) as store:
        with store.db:
            claims.insert(store.db, eid, owner_of(sleeper, host="elsewhere"))
        with pytest.raises(claims.ExperimentBusy, match=r"on another host.*--take-over"):
            store.claim(eid)
        assert store.claim(eid, take_over=True)


def test_a_claim_is_released_only_by_its_owner(tmp_path: Path,
                                               sleeper: subprocess.Popen[bytes]) -> None:
    db = tmp_path / "r.db"
    eid = new_experiment(db)
    with Store(db) as store:
        with store.db:
            claims.insert(store.db, eid, owner_of(sleeper))
        store.release(eid)
        assert store.db.execute("SELECT pid FROM claims").fetchone() == (sleeper.pid,)


# -- real processes ------------------------------------------------------------------------

def experiment_file(tmp_path: Path, workdir: Path, name: str) -> Path:
    target = workdir / f"dir-{name}"
    target.mkdir()
    doc = {"name": name, "workdir": str(workdir / "work"),
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "bs": "4k",
                          "size": "8M", "runtime": "1s", "direct": False}],
           "repeat": 4}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def claimed_by(db: str, pid: int) -> bool:
    """Does process `pid` hold a claim in `db` (a file or a postgresql:// URL)? Read
    without making anything: the run under test makes the store and its schema."""
    if not db.startswith("postgresql://"):
        if not Path(db).exists():
            return False
        try:
            with sqlite3.connect(db) as c:
                return bool(c.execute("SELECT 1 FROM claims WHERE pid = ?", (pid,)).fetchone())
        except sqlite3.OperationalError:
            return False  # the schema is still being made
    import psycopg

    try:
        with psycopg.connect(db) as c:
            return bool(c.execute("SELECT 1 FROM volbench.claims WHERE pid = %s",
                                  (pid,)).fetchone())
    except psycopg.Error:
        return False


def wait_for_claim(db: str | Path, pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if claimed_by(str(db), pid):
            return
        time.sleep(0.05)
    raise AssertionError("the first run never claimed its experiment")


@pytest.fixture(params=["sqlite", "postgresql"])
def same_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The one store two runs race on: an SQLite file, or a real PostgreSQL database
    (tests/pgstore.py; skipped where that server cannot run)."""
    if request.param == "sqlite":
        return str(tmp_path / "same.db")
    return str(request.getfixturevalue("pg_url"))


def env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": src}


def stored_runs(db: str) -> list[RunResult]:
    """The runs of the one experiment in `db`; no run UUID stored twice."""
    with Store(location.parse(db)) as store:
        (exp,) = store.experiments()
        assert store.db.execute("SELECT count(*) - count(DISTINCT uuid) FROM runs"
                                ).fetchone() == (0,)
        return store.runs([exp.id])


def descendants(pid: int, comm: str) -> list[int]:
    """The processes named `comm` below `pid`."""
    children: dict[int, list[procfs.Stat]] = {}
    for st in procfs.processes():
        children.setdefault(st.ppid, []).append(st)
    found, todo = [], [pid]
    while todo:
        for st in children.get(todo.pop(), []):
            todo.append(st.pid)
            if st.comm == comm:
                found.append(st.pid)
    return found


@contextlib.contextmanager
def tool_paused(owner: int) -> Iterator[None]:
    """The owner's fio stopped (SIGSTOP) while the block runs: the owner cannot end its
    experiment then, so the block's process finds the claim live however long it takes
    to start on a busy machine (physical, not a race against the owner's 4 runs)."""
    deadline = time.monotonic() + 60
    stopped: list[int] = []
    while not stopped:
        assert time.monotonic() < deadline, "the first run's fio never started"
        for pid in descendants(owner, "fio"):
            if procfs.signal_pid(pid, signal.SIGSTOP):
                stopped.append(pid)
        time.sleep(0.01)
    try:
        yield
    finally:
        for pid in stopped:
            procfs.signal_pid(pid, signal.SIGCONT)


@pytest.mark.slow
def test_two_resumes_at_once_store_each_run_once(tmp_path: Path, workdir: Path,
                                                 same_db: str) -> None:
    tool("fio")
    file = experiment_file(tmp_path, workdir, "one")
    db = same_db
    first = subprocess.Popen([*RUN, str(file), "--db", db, "--resume"], env=env(), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_claim(db, first.pid)
    with tool_paused(first.pid):
        second = subprocess.run([*RUN, str(file), "--db", db, "--resume"], env=env(),
                                cwd=tmp_path, capture_output=True, text=True, timeout=120)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert second.returncode == 1
    assert f"is being run by PID {first.pid} on " in second.stderr
    runs = stored_runs(db)
    assert Counter((r.repetition, r.warmup) for r in runs) == {(i, False): 1 for i in (1, 2, 3, 4)}


@pytest.mark.slow
def test_two_experiments_in_one_database_run_at_once(tmp_path: Path, workdir: Path) -> None:
    tool("fio")
    db = tmp_path / "same.db"
    files = [experiment_file(tmp_path, workdir, n) for n in ("one", "two")]
    procs = [subprocess.Popen([*RUN, str(f), "--db", str(db), "--resume"], env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for f in files]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    with Store(db) as store:
        exps = store.experiments()
        assert sorted(e.name for e in exps) == ["one", "two"]
        assert [store.count_runs(e.id) for e in exps] == [4, 4]
        # Their lifetimes overlapped: both ran at once, neither waited for the other.
        spans = [(min(r.started for r in store.runs([e.id])),
                  max(r.ended for r in store.runs([e.id]))) for e in exps]
    overlap = min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0])
    # Needs no reference: both start together, and a slow host stretches both spans.
    within("claims: two experiments' overlap s", overlap, low=0.0)


@pytest.mark.slow
def test_a_killed_owner_s_experiment_is_taken_over_by_resume(tmp_path: Path,
                                                             workdir: Path) -> None:
    tool("fio")
    file = experiment_file(tmp_path, workdir, "killed")
    db = tmp_path / "same.db"
    first = subprocess.Popen([*RUN, str(file), "--db", str(db)], env=env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    wait_for_claim(db, first.pid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill it between runs 1 and 4
        with sqlite3.connect(db) as c:
            if c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 1:
                break
        time.sleep(0.05)
    os.killpg(first.pid, 9)
    first.wait()
    cleanup = subprocess.run([sys.executable, "-m", "volbench.cli.main", "cleanup"], env=env(),
                             capture_output=True, text=True, timeout=120)
    assert cleanup.returncode == 0, cleanup.stderr
    resumed = subprocess.run([*RUN, str(file), "--db", str(db), "--resume"], env=env(),
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"took over experiment 1 (killed) in {db} from PID {first.pid}" in resumed.stdout \
        + resumed.stderr
    with Store(db) as store:
        runs = [r for r in store.runs([1]) if r.status.value == "ok"]
        assert store.db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)
    assert sorted(r.repetition for r in runs) == [1, 2, 3, 4]


@pytest.mark.slow
def test_two_resumes_of_a_new_experiment_at_once_make_one_experiment(tmp_path: Path,
                                                                   workdir: Path,
                                                                   same_db: str) -> None:
    """Nothing to resume yet: the look and the creation happen under one lock, so the
    second run finds the first's experiment (and is refused) instead of making another."""
    tool("fio")
    file = experiment_file(tmp_path, workdir, "fresh")
    db = same_db
    procs = [subprocess.Popen([*RUN, str(file), "--db", db, "--resume"], env=env(), cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    refused = [err for _, err in results if "is being run by PID" in err]
    # Refused, or (on a slow start) it came after the first had finished: nothing left.
    assert (codes == [0, 1] and len(refused) == 1) or \
        (codes == [0, 0] and any("4 already done" in out for out, _ in results)), results
    assert sorted(r.repetition for r in stored_runs(db)) == [1, 2, 3, 4]
