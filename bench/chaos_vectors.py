"""bench/chaos.py --vectors: every pgbench and PostgreSQL vector of bench/pgvectors.py
tried as a hostile experiment file would, against sentinels: a root-only folder, a
folder anyone may write (an escape as postgres lands there), a loop device no experiment
names (its SHA-256 before and after).

- refused vectors: `volbench plan FILE` must exit 1 naming the reason;
- SQL vectors: one `volbench run` whose pgbench runs one script per statement, as the
  benchmark role; each run must fail with the error the catalogue names;
- sandbox vectors: one run whose \\shell runs the probe, with the friendly script check
  switched off in-process (as a check that misses something would be); each probe line
  must say "refused".

Prints one line per vector (kind, name, expected, outcome, detail) and the counts; any
"ESCAPED" is a finding. Root, PostgreSQL and bubblewrap needed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pgvectors import PROBE, SANDBOX, SQL, VECTORS, Vector, said

SRC = Path(__file__).resolve().parents[1] / "src"


@dataclass
class Outcome:
    vector: Vector
    outcome: str  # refused | contained | ESCAPED
    detail: str

    def line(self) -> str:
        v = self.vector
        return f"{v.kind:<9} {v.name:<26} {v.expect:<10} {self.outcome:<10} {self.detail[:110]}"


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _doc(work: Path, workload: dict[str, Any]) -> dict[str, Any]:
    return {"name": "vectors", "workdir": str(work / "w"), "repeat": 1,
            "targets": [{"name": "d", "type": "directory", "path": str(work / "target")}],
            "workloads": [{"name": "pg", "tool": "pgbench", "scale": 1, "clients": 1,
                           **workload}]}


def _volbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "volbench.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=900)


def _fill(text: str, places: dict[str, str]) -> str:
    return text.format(**places)


def refused(work: Path, vector: Vector, places: dict[str, str]) -> Outcome:
    script = work / f"{vector.name}.sql"
    script.write_text(_fill(vector.script, places))
    fields: dict[str, Any] = {"duration": "1s"}
    for key, value in vector.workload.items():
        if key in ("options", "init_options"):
            fields[key] = [v.format(F=script) for v in value]
        else:
            fields[key] = {k: _fill(v, places) if isinstance(v, str) else v
                           for k, v in value.items()}
    if vector.script and "options" not in vector.workload:
        fields["script"] = str(script)
    file = work / f"{vector.name}.yaml"
    file.write_text(yaml.safe_dump(_doc(work, fields)))
    done = _volbench("plan", str(file))
    text = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if done.returncode == 1 and said(vector, done.stderr):
        return Outcome(vector, "refused", text)
    return Outcome(vector, "ESCAPED", f"plan exit {done.returncode}: {text or done.stdout[-200:]}")


def sql_runs(work: Path, places: dict[str, str]) -> list[Outcome]:
    """Every SQL vector as a pgbench script of one statement, in one real run."""
    scripts = {}
    for vector in SQL:
        if "{P}" in vector.sql:
            continue  # needs a superuser backend to aim at: tests/system/test_pg_vectors.py
        path = work / f"sql-{vector.name}.sql"
        path.write_text(_fill(vector.sql, places) + ";\n")
        scripts[str(path)] = vector
    file = work / "sql.yaml"
    file.write_text(yaml.safe_dump(_doc(work, {"transactions": 1, "script": list(scripts)})))
    db = work / "sql.db"
    _volbench("run", str(file), "--db", str(db), "--quiet")
    sys.path.insert(0, str(SRC))
    from volbench.store.db import Store

    out = []
    with Store(db) as store:
        for run in store.runs([e.id for e in store.experiments()], outputs=True):
            vector = scripts[str(run.params["script"])]
            text = f"{run.error} {' '.join(run.outputs.values())}"
            ok = str(run.status) != "ok" and said(vector, text)
            detail = next((line.split("ERROR:", 1)[1].strip() for line in text.splitlines()
                           if "ERROR:" in line), run.error or str(run.status))
            out.append(Outcome(vector, "contained" if ok else "ESCAPED", detail))
    return out


def sandbox_run(work: Path, places: dict[str, str], loop: str) -> list[Outcome]:
    """The probe through \\shell, the friendly check switched off (in this process)."""
    sys.path.insert(0, str(SRC))
    from volbench.engine.experiment import parse_document
    from volbench.engine.runner import run_experiment
    from volbench.store.db import Store
    from volbench.workloads import pgbench_scripts

    secret = "vectors-Secret-99"
    os.environ["PGPASSWORD"] = secret
    pgbench_scripts.problem = lambda text, where: None  # type: ignore[assignment]
    env = {"ROOTONLY": places["S"], "LOOPDEV": loop, "SERVICE": str(work / "w"),
           "OPEN": places["O"], "PSQL": "psql", "VOLBENCH_PID": str(os.getpid()),
           "SECRET": secret}
    probe = work / "probe.sh"
    probe.write_text("".join(f"{k}='{v}'\n" for k, v in env.items()) + PROBE)
    probe.chmod(0o755)
    script = work / "probe.sql"
    script.write_text(f"SELECT 1; \\shell sh {probe}\n")
    outcome = run_experiment(parse_document(_doc(work, {"transactions": 1,
                                                        "script": str(script)})),
                             db=work / "probe.db")
    with Store(work / "probe.db") as store:
        (run,) = store.runs([outcome.experiment_id], outputs=True)
    said_lines = run.outputs.get("pgbench_txlog.probe", "")
    results = []
    for vector in SANDBOX:
        line = next((x for x in said_lines.splitlines() if x.startswith(f"{vector.name}: ")),
                    None)
        if line is None:
            line = {"environment": f"secret in env: {said_lines.count(secret)}",
                    "link-for-root": "kept: " + run.outputs.get("pgbench_txlog.shadow", "")[:40],
                    "fifo-for-root": "kept: " + run.outputs.get("pgbench_txlog.fifo", "")[:40],
                    "daemon": f"sleep 300 processes left: {_sleepers()}"}[vector.name]
            contained = ("root:" not in line and "secret in env: 1" not in line
                         and "left: 0" in line if vector.name == "daemon" else
                         "root:" not in line and "secret in env: 1" not in line)
        else:
            contained = ": refused" in line
        results.append(Outcome(vector, "contained" if contained else "ESCAPED", line))
    return results


def _sleepers() -> int:
    """Live `sleep 300` processes: the probe leaves one running (setsid) if it can."""
    found = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found += cmdline.read_bytes() == b"sleep\x00300\x00"
        except OSError:
            continue
    return found


def run_vectors(root: Path, loop_device: str) -> list[Outcome]:
    work = Path(tempfile.mkdtemp(dir=root, prefix="vectors-"))
    work.chmod(0o755)
    (work / "target").mkdir()
    s_dir, o_dir = work / "root-only", work / "open"
    s_dir.mkdir(mode=0o700)
    (s_dir / "kept").write_text("kept\n")
    o_dir.mkdir()
    o_dir.chmod(0o777)
    places = {"S": str(s_dir), "O": str(o_dir)}
    before = _digest(loop_device)
    results = [refused(work, v, places) for v in VECTORS if v.expect == "refused"]
    results += sql_runs(work, places)
    results += sandbox_run(work, places, loop_device)
    if _digest(loop_device) != before or sorted(os.listdir(s_dir)) != ["kept"] \
            or os.listdir(o_dir):
        results = [Outcome(r.vector, "ESCAPED", "a sentinel changed") for r in results]
    subprocess.run(["rm", "-rf", str(work)], timeout=120)
    return results
