"""pgbench for real: a throwaway PostgreSQL 15 cluster on a directory or loop-disk target,
driven by volbench's runner; the cluster is gone after success, a failing script, an
exception, SIGINT, SIGTERM, and SIGKILL followed by `volbench cleanup`."""

from __future__ import annotations

import os
import pwd
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bounds import within
from support import tool
from volbench.core.errors import Interrupted
from volbench.core.model import Metric, RunResult, Status
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.services import postgres
from volbench.store.db import Store
from volbench.system import journal
from volbench.system.host import hostinfo
from volbench.targets.base import Built
from volbench.workloads import pgbench

pytestmark = pytest.mark.root


@pytest.fixture(autouse=True)
def _postgres_installed() -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)


def value(run: RunResult, name: str) -> float:
    found = [m.value for m in run.metrics if m.name == name and not m.tags]
    assert len(found) == 1 and found[0] is not None, f"{name}: {found}"
    return found[0]


def live_processes(fragment: str) -> list[str]:
    """Live processes whose argv or working directory lies under `fragment`.

    PostgreSQL's backends rewrite their argv but keep the data directory as their cwd.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z" and (fragment in argv or cwd.startswith(fragment)):
            found.append(f"{entry.name}: {argv.strip()}")
    return found


def pgbench_running(workdir: Path) -> bool:
    return any(" -T " in p and "pgbench" in p for p in live_processes(str(workdir)))


def experiment(workdir: Path, **workload: Any) -> dict[str, Any]:
    target = workdir / "target"
    target.mkdir(exist_ok=True)
    return {"name": "pg", "workdir": str(workdir), "repeat": 1,
            "targets": [{"name": "dir", "type": "directory", "path": str(target)}],
            "workloads": [{"name": "pg", "tool": "pgbench", "clients": 2, **workload}]}


def assert_all_gone(workdir: Path, state: Path) -> None:
    assert not live_processes(str(workdir))
    assert not list((workdir / "target").iterdir()), "the data directory was left behind"
    assert not list((state / "journals").glob("*.jsonl")), "the journal was not closed"


def test_runs_and_timed_init_on_a_private_cluster(workdir: Path, tmp_path: Path) -> None:
    doc = experiment(workdir, mode=["run", "init"], scale=[1, 3], threads=2, duration="2s",
                     settings={"shared_buffers": "64MB"})
    doc["repeat"] = 2
    db = tmp_path / "pg.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 8}, outcome
    with Store(db) as store:
        runs = store.runs([outcome.experiment_id], series=True, histograms=True)
    runs_mode = [r for r in runs if r.params["mode"] == "run"]
    for run in runs_mode:
        _check_run(run)
    # One cluster per target serves every scale, each scale in its own database.
    assert len({r.annotations["service"]["pid"] for r in runs}) == 1
    for scale in (1, 3):
        (size,) = {value(r, "db_size") for r in runs_mode if r.params["scale"] == scale}
        assert size == pytest.approx(pgbench.database_bytes(scale), rel=0.05)
    for run in (r for r in runs if r.params["mode"] == "init"):
        assert value(run, "init_rows") == 100000 * int(run.params["scale"])
        phases = sum(value(run, f"init_{p}") for p in ("drop_tables", "create_tables",
                                                       "client_side_generate", "vacuum",
                                                       "primary_keys"))
        assert 0 < value(run, "init_time") == pytest.approx(phases, abs=0.05)
    info = runs[0].annotations["service"]
    assert info["settings"]["shared_buffers"] == "64MB" and info["cgroup"] is None
    assert info["ram_bytes"] == hostinfo.memory_bytes()
    assert info["server_version"].startswith("15.")
    assert not Path(info["datadir"]).exists()
    assert_all_gone(workdir, tmp_path / "state")


def _check_run(run: RunResult) -> None:
    # Needs no reference: a floor for a real number, far below any tps seen.
    within("pgbench: tps (floor)", value(run, "tps"), low=10)
    # Every transaction is in the log, and in the histogram that merges repetitions.
    logged = value(run, "logged_transactions")
    assert logged == value(run, "transactions") == sum(n for _, n in run.parsed.histograms[0].bins)
    p = [value(run, f"latency_p{q}") for q in ("50", "90", "99", "99.9")]
    assert 0 < p[0] <= p[1] <= p[2] <= p[3]
    assert p[0] < value(run, "latency_avg") * 3
    assert value(run, "shared_buffers") == 64 * 2**20
    tps = [v for s in run.parsed.series if s.name == "tps" for _, v in s.points]
    assert 1 <= len(tps) <= 3 and all(v > 0 for v in tps)
    assert any("fits in shared_buffers" in m.note for m in run.metrics if m.name == "tps")


def test_a_failing_script_fails_its_runs_and_the_cluster_still_goes(workdir: Path,
                                                                     tmp_path: Path) -> None:
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT * FROM no_such_table;\n")
    doc = experiment(workdir, scale=1, transactions=20, script=[str(bad), "tpcb-like"])
    db = tmp_path / "f.db"
    outcome = run_experiment(parse_document(doc), db=db)
    with Store(db) as store:
        runs = {r.params["script"]: r for r in store.runs([outcome.experiment_id])}
    failed, ok = runs[str(bad)], runs["tpcb-like"]
    assert failed.status is Status.FAILED and "exit code 2" in failed.error
    assert "no_such_table" in failed.outputs.get("stderr", "") + failed.error
    assert ok.status is Status.OK and value(ok, "transactions") == 40
    pid = failed.annotations["service"]["pid"]
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert_all_gone(workdir, tmp_path / "state")


def test_an_exception_inside_the_service_stops_and_deletes_the_cluster(workdir: Path) -> None:
    target = workdir / "t"
    target.mkdir()
    (workdir / "svc").mkdir()
    built = Built("t", "directory", target)
    config = postgres.ClusterConfig()
    with (journal.opened("test") as jrnl, pytest.raises(RuntimeError, match="boom"),
          jrnl.scope() as scope,
          postgres.cluster(config, scope, built, workdir / "svc") as server):
        status = Path(f"/proc/{server.pid}/status").read_text()
        uid = int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
        assert uid == pwd.getpwnam("postgres").pw_uid
        assert (server.datadir / "PG_VERSION").read_text().strip() == "15"
        assert (server.sockdir / f".s.PGSQL.{server.port}").is_socket()
        assert oct(server.sockdir.stat().st_mode)[-3:] == "700"
        raise RuntimeError("boom")
    assert not server.datadir.exists() and not server.home.exists()
    assert not live_processes(str(workdir))


# The capped disk's write IOPS (test_a_throttled_disk_gives_far_fewer_transactions).
WRITE_CAP = 50


def interrupt_when(ready: Callable[[], bool], sig: int, seen: list[float] | None = None
                   ) -> threading.Thread:
    """Send `sig` to this process once `ready()` holds (from a helper thread); the
    monotonic time it first held goes into `seen`."""

    def watch() -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not ready():
            time.sleep(0.1)
        if seen is not None:
            seen.append(time.monotonic())
        time.sleep(0.5)
        os.kill(os.getpid(), sig)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_ctrl_c_mid_run_stops_the_cluster(workdir: Path, tmp_path: Path) -> None:
    """Physical: pgbench runs 30 s once started, so a run that was not interrupted ends
    at least 30 s after pgbench was first seen (polled every 0.1 s); the bound is 29 s
    after it, whatever the stopping and the teardown cost on a busy machine."""
    doc = experiment(workdir, scale=1, duration="30s")
    seen: list[float] = []
    watcher = interrupt_when(lambda: pgbench_running(workdir), signal.SIGINT, seen)
    with pytest.raises((Interrupted, KeyboardInterrupt)):
        run_experiment(parse_document(doc), db=tmp_path / "i.db")
    ended = time.monotonic()
    watcher.join(5)
    assert seen, "pgbench was never seen running"
    within("pgbench ctrl-c: s from pgbench seen to the run's end", ended - seen[0], high=29,
           reference="physical: pgbench's 30 s")
    with sqlite3.connect(tmp_path / "i.db") as con:
        assert [r[0] for r in con.execute("SELECT status FROM runs")] == ["interrupted"]
    assert_all_gone(workdir, tmp_path / "state")


def cli_run(workdir: Path, tmp_path: Path, doc: dict[str, Any]) -> subprocess.Popen[bytes]:
    file = tmp_path / "exp.yaml"
    file.write_text(yaml.safe_dump(doc))
    child = subprocess.Popen([sys.executable, "-m", "volbench.cli.main", "run", str(file),
                              "--db", str(tmp_path / "c.db"), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while not pgbench_running(workdir):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "pgbench never started"
        time.sleep(0.1)
    time.sleep(0.5)
    return child


def test_sigterm_mid_run_stops_the_cluster(workdir: Path, tmp_path: Path) -> None:
    child = cli_run(workdir, tmp_path, experiment(workdir, scale=1, duration="30s"))
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert_all_gone(workdir, tmp_path / "state")


def test_sigkill_then_cleanup_removes_the_cluster(workdir: Path, tmp_path: Path) -> None:
    child = cli_run(workdir, tmp_path, experiment(workdir, scale=1, duration="30s"))
    child.kill()
    child.communicate(timeout=30)
    time.sleep(0.5)
    # The postmaster dies with volbench (parent-death signal); its data directory on the
    # target, the target itself and the journal remain for cleanup.
    assert not [p for p in live_processes(str(workdir)) if "postgres -D" in p]
    assert list(workdir.rglob("volbench-pgdata-*"))
    cleaned = subprocess.run([sys.executable, "-m", "volbench.cli.main", "cleanup"],
                             capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed postgres" in cleaned.stdout
    assert_all_gone(workdir, tmp_path / "state")


@pytest.mark.slow
def test_a_throttled_disk_gives_far_fewer_transactions(ramdir: Path, tmp_path: Path) -> None:
    """Loop disks in RAM (the ramdir fixture), one capped at WRITE_CAP write IOPS; pgbench
    TPC-B, 4 clients, 3 s. A commit waits for its WAL flush, at least one throttled write
    for up to 4 commits (group commit): the capped server is held to at most 4 × the cap,
    about the cap in practice, while the uncapped one is held by the CPU alone (its fsync
    is a copy in RAM). Measured (docs/testing.md): the uncapped tps, quiet and beside a
    CPU hog, against the capped one's."""
    tool("losetup")
    doc: dict[str, Any] = {
        "name": "classes", "workdir": str(ramdir), "repeat": 1,
        "targets": [{"name": "fast", "type": "loopdisk", "size": "1G"},
                    {"name": "slow", "type": "loopdisk", "size": "1G",
                     "limits": {"write_iops": WRITE_CAP}}],
        "workloads": [{"name": "pg", "tool": "pgbench", "mode": ["run", "init"], "scale": 1,
                       "clients": 4, "duration": "3s"}],
    }
    db = tmp_path / "t.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 4}, outcome
    with Store(db) as store:
        everything = store.runs([outcome.experiment_id])
    runs = {r.target: r for r in everything if r.params["mode"] == "run"}
    inits = {r.target: r for r in everything if r.params["mode"] == "init"}
    for init in inits.values():
        assert value(init, "init_rows") == 100000 and value(init, "init_time") > 0
    fast, slow = runs["fast"], runs["slow"]
    within("pgbench: fast / throttled tps", value(fast, "tps") / value(slow, "tps"), low=3,
           reference=f"{value(fast, 'tps'):.0f} against {value(slow, 'tps'):.0f} tps, init "
           f"{value(inits['fast'], 'init_time'):.1f} / {value(inits['slow'], 'init_time'):.1f} s")
    # The server did its writes inside the throttled cgroup (the client is not in it).
    assert slow.annotations["service"]["cgroup"] and fast.annotations["service"]["cgroup"] is None
    assert slow.annotations["cgroup_ios"]["Write"] > 50
    assert_metric_notes_explain_cache(fast.metrics)


def assert_metric_notes_explain_cache(metrics: tuple[Metric, ...]) -> None:
    (tps,) = [m for m in metrics if m.name == "tps"]
    assert "cached" in tps.note
