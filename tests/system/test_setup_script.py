"""scripts/setup's package groups: the light base holds only what host experiments need,
each group brings its tools, and every package `volbench doctor FILE` advises comes with
the group it names. (The install itself runs on a fresh Debian 13 root in
bench/portability.sh.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support import ROOT
from volbench.system.host import tools

SETUP = ROOT / "scripts" / "setup"
# Part of every Debian system (essential or priority required): not setup's to install.
SYSTEM = {"apt", "dpkg"}


def listed(*groups: str) -> set[str]:
    args = [a for g in groups for a in ("--with", g)]
    done = subprocess.run([str(SETUP), "--list", *args], capture_output=True, text=True,
                          timeout=60, check=True)
    return set(done.stdout.split())


def test_the_base_is_light() -> None:
    base = listed()
    assert {"fio", "xfsprogs", "btrfs-progs", "e2fsprogs", "util-linux", "python3"} <= base
    assert not base & {"postgresql", "qemu-system-x86", "chromium", "bonnie++", "lvm2"}


@pytest.mark.parametrize("group", [g for g in tools.GROUPS if g != "base"])
def test_every_tool_comes_with_the_group_doctor_names(group: str) -> None:
    packages = listed(group)
    for tool in tools.TOOLS.values():
        if tool.group == group or (tool.group == "base" and tool.package not in SYSTEM):
            assert tool.package in packages, (tool.name, tool.package, group)


def test_all_is_every_group_and_a_wrong_group_is_refused() -> None:
    assert listed("all") == listed(*[g for g in tools.GROUPS if g != "base"], "dev")
    done = subprocess.run([str(SETUP), "--with", "pgbnech"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("setup: unknown group 'pgbnech' (groups: pgbench bonnie "
                                   "lab png multihost dev all)")


def fake_debian(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A PATH whose dpkg-query says nothing is installed, whose apt-get only records its
    arguments, and whose pg_lsclusters shows a cluster once apt-get "installed"."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-calls"
    scripts = {
        "dpkg-query": "exit 1",
        "apt-get": f'echo "$*" >> {calls}',
        "pg_lsclusters": f'[ -e {calls} ] && echo "17 main 5432 online postgres '
                         '/var/lib/postgresql/17/main /var/log/postgresql/x.log"; true',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return calls, {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_without_a_terminal_it_asks_for_yes_and_installs_nothing(tmp_path: Path) -> None:
    calls, env = fake_debian(tmp_path)
    done = subprocess.run([str(SETUP), "--with", "pgbench", "--system-only"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout.startswith("setup: missing packages: fio util-linux")
    assert done.stderr.strip() == ("setup: not asking without a terminal; rerun with --yes to "
                                   "install them")
    assert not calls.exists()


def test_with_yes_it_installs_and_reports_the_cluster_the_package_made(tmp_path: Path) -> None:
    calls, env = fake_debian(tmp_path)
    done = subprocess.run([str(SETUP), "--with", "pgbench", "--system-only", "--yes"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    update, install = calls.read_text().splitlines()
    assert update == "update"
    order = subprocess.run([str(SETUP), "--list", "--with", "pgbench"], capture_output=True,
                           text=True, check=True, timeout=60).stdout.split()
    assert install == "install -y --no-install-recommends " + " ".join(order)
    assert ("setup: note: the postgresql package created cluster 17/main (online, port 5432, "
            "data in /var/lib/postgresql/17/main). volbench does not use it (it makes "
            "throwaway clusters of its own). To remove it: pg_dropcluster --stop 17 main"
            ) in done.stdout
