"""A live pgbench with -r on a real PostgreSQL server: the commit statement's latency stored
as `commit_latency`, and the settings that decide what a commit waits for recorded with
every run; with `synchronous_commit: off` commits stop waiting for their WAL flush.

Measured with the captures (pgbench 15.18, this machine, tests/data/pgbench/15.18): END
2.84-2.86 ms with synchronous_commit on, 0.41 ms off; the bound below asks off < on / 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bounds import within
from support import tool
from volbench.core.model import RunResult
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.report import commitsettings
from volbench.store.db import Store

pytestmark = pytest.mark.root


def commit(run: RunResult) -> float:
    (value,) = [m.value for m in run.metrics if m.name == "commit_latency" and not m.tags]
    assert value is not None
    return value


def test_commit_latency_and_the_settings_it_depends_on(diskdir: Path, tmp_path: Path) -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)
    target = diskdir / "target"
    target.mkdir()
    common = {"tool": "pgbench", "clients": 2, "duration": "2s", "scale": 1,
              "options": ["--report-per-command"]}
    doc = {"name": "commit", "workdir": str(diskdir), "repeat": 2,
           "targets": [{"name": "dir", "type": "directory", "path": str(target)}],
           "workloads": [{"name": "waits", **common},
                         {"name": "nowait", **common,
                          "settings": {"synchronous_commit": "off"}}]}
    outcome = run_experiment(parse_document(doc), db=tmp_path / "p.db")
    assert outcome.counts == {"ok": 4}, outcome
    with Store(tmp_path / "p.db") as store:
        runs = store.runs([outcome.experiment_id])
    for run in runs:
        settings = run.annotations["service"]["settings"]
        assert set(commitsettings.SETTINGS) <= set(settings)
        assert settings["synchronous_commit"] == ("off" if run.workload == "nowait" else "on")
        assert settings["fsync"] == "on" and settings["wal_sync_method"] == "fdatasync"
    waits = sorted(commit(r) for r in runs if r.workload == "waits")
    nowait = sorted(commit(r) for r in runs if r.workload == "nowait")
    # Paired: both workloads' runs on the same server in one experiment.
    within("pgbench: slowest commit with synchronous_commit off over the fastest on",
           max(nowait) / min(waits), high=0.5, reference=f"on {waits}, off {nowait}")
