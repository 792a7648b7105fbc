"""Issue 25 on a real PostgreSQL: the user's SQL runs as a role that cannot reach outside
its database, and a SIGKILLed server leaves no shared memory in /dev/shm."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_pgbench_run import assert_all_gone, cli_run, experiment, live_processes

from support import tool
from volbench.core.model import Status
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store

pytestmark = pytest.mark.root


@pytest.fixture(autouse=True)
def _postgres_installed() -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)


def test_scripts_cannot_run_programs_write_files_or_make_tablespaces(
        workdir: Path, tmp_path: Path) -> None:
    """Before: each statement ran as the postgres superuser and the run was stored ok."""
    # Where the postgres user can reach and write: only the role may stop the writes.
    out = workdir / "out"
    out.mkdir(mode=0o777)
    os.chmod(out, 0o777)
    space = workdir / "space"
    space.mkdir()
    os.chown(space, *_postgres_ids())
    scripts = {
        "program": f"COPY (SELECT 1) TO PROGRAM 'touch {out}/program';",
        "file": f"COPY (SELECT 1) TO '{out}/file';",
        "tablespace": f"CREATE TABLESPACE evil LOCATION '{space}';",
    }
    files = []
    for name, sql in scripts.items():
        files.append(tmp_path / f"{name}.sql")
        files[-1].write_text(sql + "\n")
    doc = experiment(workdir, scale=1, clients=1, transactions=1,
                     script=[str(f) for f in files])
    db = tmp_path / "a.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"failed": 3}
    with Store(db) as store:
        runs = store.runs([outcome.experiment_id], outputs=True)
    for run in runs:
        text = run.outputs.get("stderr", "") + run.error
        assert run.status is Status.FAILED
        assert "permission denied" in text or "must be superuser" in text, text
        assert run.annotations["service"]["bench_role"] == "volbench_bench"
    assert list(out.iterdir()) == [] and list(space.iterdir()) == []
    assert_all_gone(workdir, tmp_path / "state")


def _postgres_ids() -> tuple[int, int]:
    import pwd
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


def _server_maps(workdir: Path) -> list[str]:
    """Every file the cluster's processes have mapped (postmaster and its children)."""
    (postmaster,) = [int(p.split(":")[0]) for p in live_processes(str(workdir))
                     if "postgres -D" in p]
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat[stat.rindex(")") + 2:].split()[1]) == postmaster:
            pids.append(int(entry.name))
    found = []
    for pid in pids:
        try:
            found += [line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text()
                      .splitlines() if "/" in line]
        except OSError:
            continue
    return found


def test_a_sigkilled_server_leaves_no_shared_memory_in_dev_shm(
        workdir: Path, tmp_path: Path) -> None:
    """Before: 2 /dev/shm/PostgreSQL.* segments stayed after SIGKILL and cleanup (5 of 5).
    Now the dynamic segments are files in the data directory, which cleanup removes."""
    child = cli_run(workdir, tmp_path, experiment(workdir, scale=1, duration="30s"))
    time.sleep(1.0)
    maps = _server_maps(workdir)
    assert not [m for m in maps if m.startswith("/dev/shm/")], maps
    dynamic = [m for m in maps if "/pg_dynshmem/" in m]
    assert dynamic, "no dynamic shared memory seen"
    child.kill()
    child.communicate(timeout=30)
    time.sleep(0.5)
    cleaned = subprocess.run([sys.executable, "-m", "volbench.cli.main", "cleanup"],
                             capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert not [m for m in dynamic if Path(m).exists()]
    assert_all_gone(workdir, tmp_path / "state")
