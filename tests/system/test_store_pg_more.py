"""Issue 24, more against the real server (tests/pgstore.py): `lab run` into a
postgresql:// URL (the VM stood in for by a guest that leaves a real results file), and
`volbench run --resume` once a server that went away mid-run is back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

import pgstore
from pgstore import OWNER, PASSWORD
from support import ROOT, make_run, tool
from volbench.cli.main import main
from volbench.services import postgres
from volbench.store import location
from volbench.store.db import Store
from volbench.system import proc, procfs

pytestmark = pytest.mark.root

LAB_EXPERIMENT = """\
name: labpg
lab: {disks: [{name: d1, size: 1G}]}
targets: [{name: plain, type: disk, device: /dev/disk/by-id/virtio-d1, fs: none}]
workloads: [{name: r, tool: fio, rw: randread, runtime: 1s}]
"""


def guest_results(path: Path) -> None:
    """What the guest's `volbench run` leaves in the shared outdir: a real results file."""
    with Store(path) as store:
        exp = store.begin_experiment("labpg", "h-labpg", {"name": "labpg"},
                                     {"hostname": "lab-guest"}, 1)
        store.save_target(exp, "plain", "disk", "built", {"device": "/dev/vda"})
        digest = store.save_fingerprint({"host.kernel": "6.1"}, "fp1")
        for rep in range(3):
            store.save_run(exp, make_run("plain", {"iops": 100.0 + rep}, rep,
                                         started=10.0 + rep, workload="r"),
                           fingerprint=digest)
        store.set_status(exp, "done")


def test_lab_run_into_a_postgresql_url_copies_the_runs_there_once(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from volbench.lab import labrun
    from volbench.lab.vm import LabResult

    made = tmp_path / "guest.db"
    guest_results(made)
    seen: list[Path] = []

    def vm(lab: object, argv: list[str], outdir: Path, **kwargs: object) -> LabResult:
        seen.append(Path(argv[argv.index("--outdir") + 1]))
        shutil.copyfile(made, outdir / "results.db")  # the same runs (UUIDs) each time
        return LabResult(0, "", outdir, 1.0, 2.0)

    monkeypatch.setattr(labrun, "run_in_vm", vm)
    (tmp_path / "exp.yaml").write_text(LAB_EXPERIMENT)
    monkeypatch.setenv(location.ENV, pg_url)
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    command = ["lab", "run", "--quiet", str(tmp_path / "exp.yaml"), "--workdir", str(work)]
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "1 new experiment(s), 3 new run(s)" in out and PASSWORD not in out
    assert "results in postgresql://vbowner:***@" in out
    assert (tmp_path / "volbench-report.md").exists()
    assert main(command) == 0  # the same runs again: nothing added
    assert "0 new experiment(s), 0 new run(s)" in capsys.readouterr().out
    with Store(location.parse(pg_url)) as store:
        (exp,) = store.experiments()
        assert sorted(r.repetition for r in store.runs([exp.id])) == [0, 1, 2]
        assert list(store.fingerprints([exp.id]).values()) == [{"host.kernel": "6.1"}] * 3
    assert len(seen) == 2 and all(not p.exists() for p in seen)
    assert [p.name for p in work.iterdir() if p.suffix in (".db", ".lab-lock")] == []




def test_lab_run_resume_into_a_url_continues_the_experiment_stored_there(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from volbench.engine import experiment
    from volbench.lab import labrun
    from volbench.lab.vm import LabResult

    (tmp_path / "exp.yaml").write_text(LAB_EXPERIMENT)
    spec_hash = experiment.load(tmp_path / "exp.yaml").spec_hash
    with Store(location.parse(pg_url)) as team:  # the first two runs, stored before
        exp = team.begin_experiment("labpg", spec_hash, {"name": "labpg"}, {}, 1)
        for rep in range(2):
            team.save_run(exp, make_run("plain", {"iops": 1.0}, rep, started=float(rep)))
        team.set_status(exp, "interrupted")
    claimed: list[tuple[int, ...]] = []

    def vm(lab: object, argv: list[str], outdir: Path, **kwargs: object) -> LabResult:
        assert "--resume" in argv
        with Store(location.parse(pg_url)) as team:
            claimed.extend(team.db.execute("SELECT experiment_id FROM claims").fetchall())
        with Store(outdir / "results.db") as guest:  # the guest resumes what it was given
            (row,) = guest.experiments()
            assert guest.find_resumable(spec_hash) == row and guest.count_runs(row.id) == 2
            guest.save_run(row.id, make_run("plain", {"iops": 1.0}, 2, started=2.0))
            guest.set_status(row.id, "done")
        return LabResult(0, "", outdir, 1.0, 2.0)

    monkeypatch.setattr(labrun, "run_in_vm", vm)
    monkeypatch.chdir(tmp_path)
    assert main(["lab", "run", "--quiet", "--resume", str(tmp_path / "exp.yaml"), "--db",
                 pg_url, "--workdir", str(tmp_path / "work")]) == 0
    assert "0 new experiment(s), 1 new run(s)" in capsys.readouterr().out
    assert claimed == [(exp,)]
    with Store(location.parse(pg_url)) as team:
        (row,) = team.experiments()
        assert row.status == "done"
        assert sorted(r.repetition for r in team.runs([exp])) == [0, 1, 2]
        assert team.db.execute("SELECT count(*) FROM claims").fetchone() == (0,)


# -- a server that goes away mid-run and comes back ----------------------------------------

def stop(pid: int) -> None:
    """A fast shutdown (SIGINT, what `pg_ctl stop -m fast` sends): every connection
    ends and the socket goes away."""
    start = procfs.start_ticks(pid)
    procfs.signal_pid(pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    while procfs.running(pid, start):
        assert time.monotonic() < deadline, "the server did not stop"
        time.sleep(0.05)


def stored(url: str) -> int:
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            return int(conn.execute("SELECT count(*) FROM volbench.runs").fetchone()[0])
    except psycopg.Error:
        return 0  # the run has not made the schema yet


@pytest.mark.slow
def test_resume_after_the_server_went_away_mid_run_stores_every_run_once(
        tmp_path: Path, workdir: Path) -> None:
    tool("fio")
    target = workdir / "dir"
    target.mkdir()
    doc = {"name": "gone", "workdir": str(workdir / "work"), "repeat": 6,
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "bs": "4k",
                          "size": "4M", "runtime": "1s", "direct": False}]}
    file = tmp_path / "gone.yaml"
    file.write_text(yaml.safe_dump(doc))
    run = [sys.executable, "-m", "volbench.cli.main", "run", "--quiet", str(file)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with pgstore.cluster("pgstop") as (server, cluster):
        name = f"t_{uuid.uuid4().hex[:10]}"
        server.admin(f"CREATE ROLE {OWNER} LOGIN PASSWORD '{PASSWORD}'")
        server.admin(f"CREATE DATABASE {name} OWNER {OWNER}")
        url = server.url(OWNER, name, PASSWORD)
        # How postgres.cluster started it: the same data directory, port and socket.
        argv = [str(cluster.bindir / "postgres"), "-D", str(cluster.datadir),
                *postgres._server_args(postgres.ClusterConfig(), cluster.home, cluster.port)]
        first = subprocess.Popen([*run, "--db", url], env=env, cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        restarted = None
        try:
            deadline = time.monotonic() + 120
            while stored(url) < 1:  # gone between the first run and the last
                assert first.poll() is None and time.monotonic() < deadline, first.stderr
                time.sleep(0.05)
            stop(cluster.pid)
            _, err = first.communicate(timeout=120)
            assert first.returncode != 0 and PASSWORD not in err
            last = err.strip().splitlines()[-1]
            assert "PostgreSQL" in last and "--resume" in last, err
            restarted = proc.start(argv, log=cluster.home / "restart.log",
                                   cwd=cluster.datadir, user=postgres.PG_USER)
            assert postgres._wait_ready(restarted, cluster.datadir) is None
            before = stored(url)
            assert 1 <= before < 6
            again = subprocess.run([*run, "--db", url, "--resume"], env=env, cwd=tmp_path,
                                   capture_output=True, text=True, timeout=300)
            assert again.returncode == 0, again.stderr
            assert f"{before} already done" in again.stdout and "took over" in again.stderr
            with Store(location.parse(url)) as store:
                (exp,) = store.experiments()
                runs = store.runs([exp.id])
                assert store.db.execute("SELECT count(*) - count(DISTINCT uuid) FROM runs"
                                        ).fetchone() == (0,)
                assert store.db.execute("SELECT count(*) FROM claims").fetchone() == (0,)
                assert exp.status == "done"
            assert Counter((r.repetition, r.warmup) for r in runs) == \
                {(i, False): 1 for i in range(1, 7)}
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
            if restarted is not None:
                procfs.signal_pid(restarted.pid, signal.SIGINT)
                try:
                    restarted.popen.wait(timeout=60)
                finally:
                    restarted.stop()
