"""scripts/setup's package groups: the light base holds only what host experiments need,
each group brings its tools, and every package `volbench doctor FILE` advises comes with
the group it names. (The install itself runs on a fresh Debian 13 root in
bench/portability.sh.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from volbench import tools

SETUP = Path(__file__).resolve().parent.parent / "scripts" / "setup"
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
