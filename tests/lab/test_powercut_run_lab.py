"""A power cut through `volbench run` (a step of the shared boot, tests/lab/conftest.py):
the experiment path end to end, few cuts.

Two xfs targets, one on a write-back disk (flushes honoured), one on a `lying` disk
whose own write-back (every 30 s) never comes within a run; fio 4k random writes with
an fdatasync each, every run cut at a seeded moment 3-6 s in, 3 cuts per target. Each
run must come back, keep the tool's speed up to the cut and its durability figures; the
honest disk loses nothing, the lying one loses acknowledged writes in every cut (all it
wrote since the cycle began), and the report's answer says so beside its speed.

Lab time: 163 s for the 4 cut runs (2026-11-28, load 8-11 beside two other lab VMs;
~40 s a run), inside CI's ~3 min for power cuts; 3 cuts a target would be ~245 s. Its
first lab run (before Power.over) failed in 42 s: the cut took every wrapped disk while
only the run's own stack went down.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from support import load
from volbench import report
from volbench.stats.durability import upper_bound
from volbench.store.db import Store

pytestmark = [pytest.mark.lab, pytest.mark.slow]
# 2 cuts a target keeps the step near CI's ~3 min for power cuts (docs/durability.md).
CUTS = 2
# The report's 95 % upper bound on the share of cuts that lose data, as it prints it.
BOUND = re.escape(f"{100 * upper_bound(0, CUTS):.1f}")

EXPERIMENT = f"""
name: lab-power-cut-run
lab:
  disks:
    - {{name: pcr1, size: 320M, class: pcrwb}}
    - {{name: pcr2, size: 320M, class: pcrlie}}
  classes:
    pcrwb: {{iops: 2000, bps: 200M, write_cache: write-back}}
    pcrlie: {{iops: 2000, bps: 200M, write_cache: lying, writeback: 30s}}
targets:
  - {{name: honest, type: disk, device: /dev/disk/by-id/virtio-pcr1, fs: xfs}}
  - {{name: lying, type: disk, device: /dev/disk/by-id/virtio-pcr2, fs: xfs}}
baseline: honest
workloads:
  - name: fsync-writes
    tool: fio
    rw: randwrite
    bs: 4k
    size: 32M
    runtime: 20s
    direct: false
    options: {{fdatasync: 1}}
    faults:
      - {{action: power-cut, at: {{between: [3s, 6s]}}, repeat: {CUTS}}}
"""


def _cut(run: Any) -> dict[str, float]:
    return {m.name: m.value for m in run.metrics if m.tags.get("fault") == "power-cut"}


@pytest.fixture(scope="module")
def db(shared_boot: dict[str, Any]) -> Path:
    return Path(shared_boot["db"]("powercutrun"))


def test_every_cut_run_recovered_and_kept_its_speed(db: Path) -> None:
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = store.runs([row.id])
    assert len(runs) == 2 * CUTS
    for run in runs:
        assert str(run.status) == "ok", run.error
        cut = run.annotations["power_cut"]
        # The cut moment is the test's own schedule: needs no reference.
        assert 3.0 <= cut["at_s"] <= 6.0 and cut["cut_s"] is not None
        found = _cut(run)
        assert found["recovered"] == 1.0 and found["recovery_seconds"] > 0
        assert found["acked_writes"] > 0
        assert any(m.name == "iops" and m.value for m in run.metrics), run.metrics
        steps = cut["outcome"]["steps"]
        assert any(s["step"].startswith("mount") for s in steps)
    honest = [_cut(r) for r in runs if r.target == "honest"]
    lying = [_cut(r) for r in runs if r.target == "lying"]
    assert all(c["acked_lost"] == 0 for c in honest), honest
    assert all(c["acked_lost"] > 0 for c in lying), lying


def test_the_answer_puts_what_the_cuts_lost_beside_the_speed(db: Path) -> None:
    flat = " ".join(report.render(load(db), "table").split())
    assert re.search(rf"honest [\d.]+ op/s \[[^]]+\] baseline — lost nothing in {CUTS} "
                     rf"power cuts \(≤ {BOUND} %\)", flat), flat
    assert re.search(rf"lying [\d.]+ op/s \[[^]]+\] [^—]+ — lost acknowledged writes in "
                     rf"{CUTS} of {CUTS} power cuts", flat), flat
