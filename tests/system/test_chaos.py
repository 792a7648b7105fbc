"""The kill test: volbench killed at random (seeded) moments through the real CLI —
SIGKILL of its process group then `volbench cleanup` then `--resume`, SIGTERM, SIGINT —
over loop-disk, throttled and directory targets with fio, and PostgreSQL + pgbench.
No run is lost or stored twice; no process, loop device, mount, cgroup or journal is
left. bench/chaos.py runs the same trials in bulk (README "Measured")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support import ROOT, tool

sys.path.insert(0, str(ROOT / "bench"))
import chaos  # bench/ is not a package: imported from its folder

pytestmark = [pytest.mark.root, pytest.mark.slow]

# (seed, shape, signal, anchor): each signal on both shapes; "tool" is 0.15-0.6 s after
# the measured tool starts — where fio's setsid'd worker used to survive a SIGKILL.
TRIALS = [
    (1004, "fio", "KILL", "tool"),
    (11, "fio", "TERM", "start"),
    (12, "fio", "INT", "tool"),
    (8, "pgbench", "KILL", "tool"),
    (7, "pgbench", "TERM", "tool"),
]


@pytest.mark.parametrize(("seed", "shape", "sig", "anchor"), TRIALS)
def test_a_kill_at_a_random_moment_loses_duplicates_and_leaves_nothing(
        seed: int, shape: str, sig: str, anchor: str) -> None:
    tool("fio" if shape == "fio" else "pgbench")
    trial = chaos.run_trial(seed, Path("/var/tmp"), shape=shape, sig=sig, anchor=anchor)
    assert (trial.lost, trial.duplicated, trial.leaked) == (0, 0, []), trial.line()
    if sig != "KILL":
        assert trial.exit_code in (0, 130), trial.line()
