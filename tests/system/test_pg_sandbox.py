"""Issue 34: pgbench is confined by privilege, not by patterns over its text.

Every pgbench runs as the run's own unprivileged user in a bubblewrap sandbox that can
write only its run directory. The script checks stay as friendly errors; these tests
switch them off (as a check that misses something would) and run a script whose
`\\shell` tries the ways out of the sandbox a hostile user would: a root-only folder,
a sentinel loop device, /tmp and /dev/shm, the server's superuser through its socket,
volbench's own process, a setuid program, a user namespace remounting /, the store's
password in the environment, a link and a FIFO planted for volbench to read as root,
a process left running. Each is refused, and the sentinels are byte for byte as before.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_guard import loop
from test_pgbench_run import assert_all_gone, experiment, live_processes

from support import ROOT, tool
from volbench.core.errors import ExperimentError
from volbench.core.model import RunResult
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store

sys.path.insert(0, str(ROOT / "bench"))
from pgvectors import PROBE, SANDBOX

try:
    from volbench.workloads import pgbench_scripts
except ImportError:  # the code before this change, for checking that these tests fail there
    pgbench_scripts = None  # type: ignore[assignment]

pytestmark = pytest.mark.root



def digest(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture(autouse=True)
def _postgres_installed() -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)


@pytest.fixture
def sentinels(workdir: Path) -> Iterator[dict[str, Any]]:
    """A loop device no experiment names, a root-only folder, a folder open to all."""
    root_only = workdir / "root-only"
    root_only.mkdir(mode=0o700)
    (root_only / "kept").write_text("kept\n")
    open_dir = workdir / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with loop(workdir, "8M", name="sentinel") as device:
        yield {"loop": device, "root_only": root_only, "open": open_dir,
               "before": digest(device)}


def _probe_run(workdir: Path, tmp_path: Path, sentinels: dict[str, Any],
               monkeypatch: pytest.MonkeyPatch) -> RunResult:
    """One pgbench run whose script runs PROBE through \\shell, with the friendly check
    switched off."""
    probe = workdir / "probe.sh"
    probe.write_text(PROBE)
    probe.chmod(0o755)
    script = workdir / "probe.sql"
    # After a `;`, which the check of the code before this change did not see.
    script.write_text(f"SELECT 1; \\shell sh {probe}\nSELECT 1;\n")
    if pgbench_scripts is not None:
        monkeypatch.setattr(pgbench_scripts, "problem", lambda text, where: None)
    secret = "sandbox-probe-Secret-77"
    monkeypatch.setenv("PGPASSWORD", secret)
    env = {"ROOTONLY": str(sentinels["root_only"]), "LOOPDEV": sentinels["loop"],
           "SERVICE": str(workdir / "run"), "OPEN": str(sentinels["open"]),
           "PSQL": tool("psql"), "VOLBENCH_PID": str(os.getpid()), "SECRET": secret}
    probe.write_text("".join(f"{k}='{v}'\n" for k, v in env.items()) + PROBE)
    doc = experiment(workdir / "run", scale=1, clients=1, transactions=1, script=str(script))
    db = tmp_path / "p.db"
    outcome = run_experiment(parse_document(doc), db=db)
    with Store(db) as store:
        (run,) = store.runs([outcome.experiment_id], outputs=True)
    return run


def test_a_shell_command_can_do_no_more_than_the_sandbox_user(
        workdir: Path, tmp_path: Path, sentinels: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: \\shell ran as root (the root-only folder got a file, the loop device's
    bytes changed, psql -U postgres ran COPY TO PROGRAM as postgres)."""
    (workdir / "run").mkdir()
    run = _probe_run(workdir, tmp_path, sentinels, monkeypatch)
    out = run.outputs.get("pgbench_txlog.probe", "")
    assert "probed" in out, (run.error, run.outputs.get("stderr"))
    probed = [v.name for v in SANDBOX if f"name={v.name} " in PROBE]
    assert len(probed) == 14
    for name in probed:
        assert f"{name}: refused" in out, f"{name}:\n{out}"
    # Refused for the right reasons: the server was found, and said no.
    assert "server: /" in out
    assert 'Peer authentication failed for user "postgres"' in out
    assert 'permission denied for database "postgres"' in out
    assert "must be superuser" in out and "Read-only file system" in out
    assert int(out.split("processes: ")[1].split()[0]) < 10  # its own PID namespace
    assert "secret in env: 0" in out
    box = run.annotations["sandbox"]
    assert box["user"].startswith("volbench-")
    assert int(out.split("uid: ")[1].split()[0]) == box["uid"] != 0
    # What volbench, as root, read back from the run directory: not the link's target,
    # not the FIFO (it did not hang either).
    assert "root:" not in run.outputs.get("pgbench_txlog.shadow", "")
    assert "not read" in run.outputs.get("pgbench_txlog.shadow", "")
    assert "not read" in run.outputs.get("pgbench_txlog.fifo", "")
    # The sentinels are as they were, nothing was planted, nothing outlived the run.
    assert digest(sentinels["loop"]) == sentinels["before"]
    assert [p.name for p in sentinels["root_only"].iterdir()] == ["kept"]
    assert list(sentinels["open"].iterdir()) == []
    for gone in ("/tmp/volbench-sandbox-probe", "/var/tmp/volbench-sandbox-probe",
                 "/etc/volbench-probe"):
        assert not Path(gone).exists()
    assert not [p for p in live_processes("sleep 300")]
    with pytest.raises(KeyError):  # the user went with the run
        pwd.getpwnam(box["user"])
    assert_all_gone(workdir / "run", tmp_path / "state")


def test_the_same_script_is_refused_early_by_the_friendly_check(
        workdir: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text("SELECT 1; \\shell touch /root/x\n")
    doc = experiment(workdir, scale=1, clients=1, transactions=1, script=str(script))
    with pytest.raises(ExperimentError) as err:
        parse_document(doc)
    assert f"{script}:1 uses \\shell" in str(err.value)


def test_a_script_swapped_after_it_was_read_is_checked_again_from_its_copy(
        workdir: Path, tmp_path: Path, sentinels: dict[str, Any]) -> None:
    """Before: the script was checked when the experiment was read; a `command` workload
    that ran first swapped it for one with \\shell, which pgbench then ran as root."""
    script = workdir / "swap.sql"
    script.write_text("SELECT 1;\n")
    script.chmod(0o666)
    evil = f"SELECT 1; \\shell touch {sentinels['root_only']}/swapped\n"
    doc = experiment(workdir, scale=1, clients=1, transactions=1, script=str(script))
    doc["workloads"].insert(0, {"name": "swap", "tool": "command", "user": "nobody",
                                "command": ["sh", "-c", f"printf '{evil}' > {script}"]})
    db = tmp_path / "s.db"
    outcome = run_experiment(parse_document(doc), db=db)
    with Store(db) as store:
        runs = {r.workload: r for r in store.runs([outcome.experiment_id])}
    assert runs["swap"].status.value == "ok"
    assert "\\shell" in script.read_text()  # the swap happened
    assert runs["pg"].status.value == "failed"
    assert "uses \\shell" in runs["pg"].error, runs["pg"].error
    assert [p.name for p in sentinels["root_only"].iterdir()] == ["kept"]


def test_a_script_swapped_for_a_link_to_a_private_file_is_refused_at_the_run(
        workdir: Path, tmp_path: Path) -> None:
    """Issue 34 attacked again: a script that is (or becomes, after `plan`) a link to a
    file only root may read was read by volbench as root, and pgbench's syntax error
    stored its first line in the run's stderr (/etc/shadow's root line, in the attack)."""
    secret = workdir / "secret"
    secret.write_text("private-Secret-4343:*:1:0:::\n")
    secret.chmod(0o600)
    swap = workdir / "swap"
    swap.mkdir()
    swap.chmod(0o777)
    script = swap / "s.sql"
    script.write_text("SELECT 1;\n")
    doc = experiment(workdir, scale=1, clients=1, transactions=1, script=str(script))
    doc["workloads"].insert(0, {"name": "swap", "tool": "command", "user": "nobody",
                                "command": ["ln", "-sf", str(secret), str(script)]})
    db = tmp_path / "k.db"
    outcome = run_experiment(parse_document(doc), db=db)
    with Store(db) as store:
        runs = {r.workload: r for r in store.runs([outcome.experiment_id], outputs=True)}
    assert script.is_symlink()  # the swap happened
    assert runs["pg"].status.value == "failed"
    assert f"(-> {secret}) is private (mode 0600)" in runs["pg"].error, runs["pg"].error
    assert "4343" not in repr(runs["pg"]) and "4343" not in db.read_bytes().decode("latin-1")


def test_script_copies_are_root_owned_and_what_pgbench_reads(
        workdir: Path, tmp_path: Path) -> None:
    script = tmp_path / "ok.sql"
    script.write_text("SELECT 1;\n")
    doc = experiment(workdir, scale=1, clients=1, transactions=2, script=str(script),
                     options=["-Cf", f"{script}@2", "--no-vac"])
    db = tmp_path / "c.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 1}, outcome
    with Store(db) as store:
        (run,) = store.runs([outcome.experiment_id])
    argv = list(run.argv)
    files = [argv[i + 1] for i, a in enumerate(argv) if a in ("-f", "--file")]
    assert len(files) == 2 and all("/scripts/" in f for f in files), argv
    assert files[1].endswith("@2") and "--connect" in argv and "--no-vacuum" in argv
    assert run.annotations["sandbox"]["writable"] == [str(Path(files[0]).parent.parent)]
    mode = stat.S_IMODE(os.stat(workdir).st_mode)
    assert mode  # the run directory itself is gone after the run


def _journaled_users(state: Path) -> list[str]:
    import json

    return [json.loads(line)["data"]["name"]
            for path in (state / "journals").glob("*.jsonl")
            for line in path.read_text().splitlines()
            if json.loads(line).get("kind") == "sandbox-user"]


def test_a_killed_run_s_sandbox_user_goes_with_cleanup(workdir: Path, tmp_path: Path) -> None:
    """The user is journaled before it exists: after a SIGKILL, `volbench cleanup` ends
    what still runs as it and removes it."""
    import subprocess

    from test_pgbench_run import cli_run

    child = cli_run(workdir, tmp_path, experiment(workdir, scale=1, duration="30s"))
    child.kill()
    child.communicate(timeout=30)
    (user,) = _journaled_users(tmp_path / "state")
    pwd.getpwnam(user)  # still there: nothing removed it yet
    cleaned = subprocess.run([sys.executable, "-m", "volbench.cli.main", "cleanup"],
                             capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    with pytest.raises(KeyError):
        pwd.getpwnam(user)
    assert_all_gone(workdir, tmp_path / "state")


def test_libpq_variables_of_volbench_s_environment_reach_no_child(
        workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: PGOPTIONS reached volbench's own psql, which connects as the superuser
    (`-c session_preload_libraries=…` loads a library into its backend); here a library
    that does not exist stops the run, as a real one would have run."""
    monkeypatch.setenv("PGOPTIONS", "-c session_preload_libraries=volbench_no_such_lib")
    monkeypatch.setenv("PGHOST", "/nonexistent")
    doc = experiment(workdir, scale=1, clients=1, transactions=5)
    outcome = run_experiment(parse_document(doc), db=tmp_path / "e.db")
    assert outcome.counts == {"ok": 1}, outcome


def test_where_useradd_cannot_write_shadow_the_user_is_written_directly(
        workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab guest: virtme-ng mounts a file of its own over /etc/shadow and useradd
    fails ("failure while writing changes to /etc/shadow": seen in the first lab run).
    The user is then written into /etc/passwd and /etc/group (system/accounts.py), runs
    pgbench, and is removed with the run."""
    from volbench.system import sandbox

    real = sandbox._locked

    def no_shadow(argv: list[str]) -> str | None:
        if argv[0] == "useradd":
            return "useradd exited 1 (useradd: failure while writing changes to /etc/shadow)"
        return real(argv)

    monkeypatch.setattr(sandbox, "_locked", no_shadow)
    before = Path("/etc/passwd").read_text().count("volbench-")
    doc = experiment(workdir, scale=1, clients=1, transactions=5)
    db = tmp_path / "d.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 1}, outcome
    with Store(db) as store:
        (run,) = store.runs([outcome.experiment_id])
    user = run.annotations["sandbox"]["user"]
    with pytest.raises(KeyError):
        pwd.getpwnam(user)
    assert f"{user}:" not in Path("/etc/group").read_text()
    assert Path("/etc/passwd").read_text().count("volbench-") == before
