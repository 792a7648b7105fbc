"""Issue 34, attacked again: files an experiment names are read by volbench as root.
Before: `script:` naming a link to /etc/shadow (or `-f /etc/shadow`, or an fio job file
or include) was read, copied into the run directory, sent to the server as SQL, and the
first line came back in pgbench's syntax error, stored as the run's stderr. Now a file
the experiment names is read only when every user may read it (config/userfile.py);
the experiment file itself, named on the command line, is not held to that. And a
server setting with a trailing newline ("on\\n") passed `plan` (a regex's `$`) and only
failed the server's start."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_inputs_34 import cli, experiment

from volbench.config import userfile
from volbench.services import pgsettings

SECRET = "private-Secret-4242"


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A file only its owner may read (as /etc/shadow or a key is), and a link to it."""
    secret = tmp_path / "secret"
    secret.write_text(f"{SECRET}:*:1:0:::\n")
    secret.chmod(0o600)
    (tmp_path / "link.sql").symlink_to(secret)
    return secret


@pytest.mark.parametrize("form", ["script-link", "script", "option", "jobfile", "include"])
def test_a_private_file_an_experiment_names_is_refused_unread(
        tmp_path: Path, private: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    link = tmp_path / "link.sql"
    if form in ("jobfile", "include"):
        job = tmp_path / "job.fio"
        job.write_text(f"[j]\nrw=read\nsize=4M\ninclude {link}\n")
        named = link if form == "include" else private
        workload: dict[str, object] = {"name": "f", "tool": "fio",
                                       "jobfile": str(job if form == "include" else private)}
        what = "fio job file"
    else:
        named = link if form == "script-link" else private
        workload = ({"name": "p", "tool": "pgbench", "options": [f"-Cf{named}@2"]}
                    if form == "option" else
                    {"name": "p", "tool": "pgbench", "script": str(named)})
        what = "pgbench script"
    code, err = cli(capsys, ["plan", str(experiment(tmp_path, workload))])
    assert code == 1, err
    shown = f"{named} (-> {private})" if named == link else str(named)
    assert f"the {what} {shown} is private (mode 0600)" in err, err
    assert "chmod o+r" in err and SECRET not in err


def test_the_same_file_readable_by_all_is_taken(tmp_path: Path, private: Path) -> None:
    """(Unit tests start no process, so this reads as the experiment's readers do.)"""
    assert SECRET in userfile.read_text(private, "experiment file")  # the command line's
    assert SECRET in userfile.read_text(private, "file to import")
    private.chmod(0o644)
    assert SECRET in userfile.read_text(tmp_path / "link.sql", "pgbench script")
    assert SECRET in userfile.read_text(private, "fio job file")


@pytest.mark.parametrize("value", ["on\n", "256MB\n", "on\ninclude_dir 'x'"])
def test_a_setting_value_with_a_newline_is_refused(value: str) -> None:
    assert pgsettings.problem("fsync", value) is not None
    assert pgsettings.problem("fsync", value.split("\n")[0]) is None
    assert pgsettings.problem("default_transaction_isolation", "repeatable read") is None


@pytest.mark.parametrize("form", ["script", "link", "option", "jobfile", "include", "sys"])
def test_a_kernel_file_an_experiment_names_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    """Issue 34's audit: /proc/self/cmdline is world-readable, so the mode rule let it
    through; read by volbench it is volbench's own command line (a --db password
    included), copied into the run directory as the script pgbench reads."""
    named = Path("/sys/kernel/mm/transparent_hugepage/enabled" if form == "sys"
                 else "/proc/self/cmdline")
    if form == "link":
        (tmp_path / "cmd.sql").symlink_to(named)
        named = tmp_path / "cmd.sql"
    if form in ("jobfile", "include"):
        job = tmp_path / "job.fio"
        job.write_text(f"[j]\nrw=read\nsize=4M\ninclude {named}\n")
        workload: dict[str, object] = {"name": "f", "tool": "fio",
                                       "jobfile": str(job if form == "include" else named)}
        what = "fio job file"
    else:
        workload = ({"name": "p", "tool": "pgbench", "options": [f"-f{named}@2"]}
                    if form == "option" else
                    {"name": "p", "tool": "pgbench", "script": str(named)})
        what = "pgbench script"
    if not named.exists():
        pytest.skip(f"{named} does not exist here")
    code, err = cli(capsys, ["plan", str(experiment(tmp_path, workload))])
    assert code == 1, err
    assert f"the {what} {named} is on " in err and "a kernel file system" in err, err
    assert "Traceback" not in err
