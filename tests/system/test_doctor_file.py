"""`volbench doctor FILE`: exactly what one experiment needs, what is missing, and the
setup command that installs it. Missing tools are made missing for real, by running the
command with a PATH that holds only some of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import tool
from volbench.cli import needs
from volbench.engine.experiment import parse_document
from volbench.system.host import pgfind

DOC = {"name": "d",
       "targets": [{"name": "a", "type": "loopdisk", "size": "1G", "fs": "xfs",
                    "limits": {"read_iops": 500}},
                   {"name": "b", "type": "btrfs", "disks": 2, "size": "1G"}],
       "workloads": [{"name": "bon", "tool": "bonnie++"},
                     {"name": "f", "tool": "fio", "rw": "read", "bs": "1M", "size": "64M"}]}


def doctor(tmp_path: Path, doc: dict[str, object], path: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / "exp.yaml"
    file.write_text(yaml.safe_dump(doc))
    return subprocess.run([sys.executable, "-m", "volbench.cli.main", "doctor", str(file)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": path})


def test_lists_what_the_file_needs_and_how_to_install_what_is_missing(tmp_path: Path) -> None:
    only = tmp_path / "bin"
    only.mkdir()
    (only / "fio").symlink_to(tool("fio"))
    done = doctor(tmp_path, DOC, str(only))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert f"ok  fio                  {only}/fio  (for workload f)" in lines
    assert "--  bonnie++             missing  (for workload bon)" in lines
    assert "--  losetup              missing  (for target a, target b)" in lines
    # Only what the file uses: no PostgreSQL, no lab, no hdparm.
    assert not [line for line in lines if "PostgreSQL" in line or "hdparm" in line
                or "lab" in line]
    assert lines[-1] == ("install what is missing: scripts/setup --with bonnie   (Debian "
                         "packages: bonnie++ btrfs-progs e2fsprogs mount xfsprogs)")


@pytest.mark.root
def test_nothing_missing_exits_zero(tmp_path: Path) -> None:
    for name in ("fio", "bonnie++", "mkfs.btrfs", "losetup"):
        tool(name)
    done = doctor(tmp_path, DOC, os.environ["PATH"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("everything ")


def test_postgresql_missing_names_the_pgbench_group(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(pgfind, "DIST_GLOBS", (str(tmp_path / "none/*/bin"),))
    exp = parse_document({"name": "p", "targets": [{"name": "d", "type": "directory",
                                                    "path": str(tmp_path)}],
                          "workloads": [{"name": "pg", "tool": "pgbench"}]})
    found = {n.what: n for n in needs.needs(exp)}
    pg = found["PostgreSQL"]
    assert not pg.ok and pg.users == "workload pg" and "PATH (no postgres)" in pg.detail
    assert needs.install_command(list(found.values())) == \
        "scripts/setup --with pgbench   (Debian packages: bubblewrap passwd postgresql " \
        "util-linux)"


def test_plain_doctor_names_the_postgresql_installation(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    tool("postgres")
    from volbench.cli.main import main

    assert main(["doctor"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x[4:].startswith("PostgreSQL")]
    install = pgfind.locate()
    assert line.startswith("ok ") and f" in {install.bindir} ({install.found_by})" in line
