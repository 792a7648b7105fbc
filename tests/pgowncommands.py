"""Every psql argv volbench runs for a pgbench workload (setup, after a run, the
multi-host driver's prepare and count), for tests of whom each connects as (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from volbench.engine.experiment import parse_document
from volbench.remote.hosts import HostSpec
from volbench.services import pgclients
from volbench.targets.base import Built
from volbench.workloads import pgbench
from volbench.workloads.base import RunContext


def service(tmp_path: Path, hosts: bool) -> dict[str, str]:
    values = {"host": "/sock", "port": "5999", "user": "postgres",
              "bench_user": "volbench_bench", "workdir": str(tmp_path),
              "facts": str(tmp_path / "facts.json")}
    if hosts:
        values[pgclients.CLIENTS] = json.dumps([
            {"name": "load1", "host": HostSpec("load1", "10.0.1.2", "ns1").to_json(),
             "control": None, "server": "10.0.1.1", "clock": {"offset_s": 0.0}}])
    return values


def own_psql_commands(tmp_path: Path) -> list[list[str]]:
    """Every psql argv volbench runs for a plain and a multi-host pgbench workload."""
    found: list[list[str]] = []
    for extra in ({}, {"clients_from": ["load1"]}):
        document: dict[str, Any] = {
            "name": "x", "hosts": ["local", {"name": "load1", "address": "127.0.0.1"}],
            "targets": [{"name": "t", "type": "directory", "path": "/tmp"}],
            "workloads": [{"name": "p", "tool": "pgbench", "duration": "5s", **extra}]}
        spec = parse_document(document).workloads[0]
        ctx = RunContext(Built("t", "directory", tmp_path), tmp_path / "run",
                         service(tmp_path, bool(extra)))
        for params in pgbench.cases(spec):
            steps = [*pgbench.setup(spec, params, ctx), *pgbench.after(spec, params, ctx)]
            found += [list(s.argv) for s in steps]
            inv = pgbench.command(spec, params, ctx)
            if extra and params["mode"] == "run":
                driver = json.loads(inv.files[Path(inv.argv[3])])
                found += [*driver["prepare"], *([driver["count"]] if driver["count"] else [])]
    return [argv for argv in found if Path(argv[0]).name == "psql"]
