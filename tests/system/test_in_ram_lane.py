"""scripts/in-ram, which scripts/test runs tests/unit + tests/system through (beside the
shared lab boot): the command sees tmpfs on /var/tmp/volbench and /var/tmp/volbench-tests,
gets pytest's base folder in RAM, and the host sees none of it, during or after.

Why it matters: the lab's disk images are read with O_DIRECT from the host's disk, and a
loop disk of the host tests read it at 55-78k requests/s (the disk 100 % busy), which
slowed the lab's md one-mirror reads from 150 to 80 op/s in the CI run of 2026-11-28.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import ROOT

IN_RAM = ROOT / "scripts" / "in-ram"
PROBE = """
import subprocess, sys
def fstype(path):
    return subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", path],
                          capture_output=True, text=True, check=True).stdout.split()[-1]
# What the host (PID 1's mount namespace) sees while the lane runs.
host = "volbench-lane" in open("/proc/1/mountinfo").read()
print(sys.argv[1:], "host-sees-it" if host else "host-sees-nothing",
      fstype("/var/tmp/volbench"), fstype("/var/tmp/volbench-tests"),
      fstype(sys.argv[-1].split("=", 1)[1]))
"""


def host_mounts() -> str:
    """The mounts PID 1 sees (this test may itself run in scripts/in-ram's namespace)."""
    with open("/proc/1/mountinfo") as mounts:
        return mounts.read()


@pytest.mark.root
def test_the_lane_runs_in_ram_and_leaves_the_host_as_it_was() -> None:
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", str(IN_RAM),
         sys.executable, "-c", PROBE],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip().endswith("host-sees-nothing tmpfs tmpfs tmpfs"), (
        done.stdout + done.stderr)
    assert "--basetemp=/var/tmp/volbench-tests/pytest" in done.stdout, done.stdout
    assert "volbench-lane" not in host_mounts()
