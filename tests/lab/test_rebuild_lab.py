"""Ground truth for md's rebuild in the lab (a step of the shared boot, tests/lab/conftest.py).

RAID1 over two 128M lab disks capped at 4 MiB/s (2000 IOPS: the byte cap binds for md's
64 KiB rebuild I/O). Each run fails member rb2 at 2 s and adds it back at 4 s; md
rebuilds the whole member (the array has no bitmap: mdadm adds none below 100 GB).

- idle-cap / idle-limit: a workload that does almost no I/O (fio 4k random reads at
  `rate_iops=1`: one read a second keeps md's array "idle" in md's sense, 8 sectors
  against its 64-sector threshold, so md rebuilds at speed_limit_max; and the run keeps
  fio's per-second series and the fault schedule like any run). The rebuild must take
  size ÷ min(the disks' cap, speed_limit_max) within ±15 %: 4 MiB/s (the cap binds, md's
  limit at 100000 KiB/s) and 3000 KiB/s (md's limit binds).
- loaded: fio sequential 64k reads at QD4 during the rebuild, md's limits both at
  100000 KiB/s (md does not hold itself back): the rebuild's share of the cap (its
  rate from mdstat) and the workload's (its bytes in the rebuild phase) are reported;
  both read the surviving member, so together they take its cap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bounds import within
from volbench.store.db import Store

MiB = 2**20
CAP = 4 * MiB
LIMIT_KIB = 3000
MEMBER = "/dev/disk/by-id/virtio-rb2"


def _workload(name: str, speed_min: int, speed_max: int, load: str) -> str:
    return f"""
  - name: {name}
    tool: fio
    size: 16M
{load}
    faults:
      - {{at: 2s, action: fail, device: {MEMBER},
         speed_limit_min: {speed_min}, speed_limit_max: {speed_max}}}
      - {{at: 4s, action: restore, device: {MEMBER}}}"""


IDLE = """    rw: randread
    bs: 4k
    iodepth: 1
    runtime: {runtime}
    options: {{rate_iops: "1"}}"""
LOADED = """    rw: read
    bs: 64k
    iodepth: 4
    runtime: 25s"""

EXPERIMENT = f"""
name: lab-rebuild
lab:
  disks:
    - {{name: rb1, size: 128M, class: rebuild}}
    - {{name: rb2, size: 128M, class: rebuild}}
  classes:
    rebuild: {{iops: 2000, bps: 4M}}
targets:
  - {{name: rb, type: mdraid, level: raid1, fs: none,
     devices: [/dev/disk/by-id/virtio-rb1, {MEMBER}]}}
workloads:{_workload("idle-cap", 1000, 100000, IDLE.format(runtime="50s"))}{
    _workload("idle-limit", 1000, LIMIT_KIB, IDLE.format(runtime="60s"))}{
    _workload("loaded", 100000, 100000, LOADED)}
repeat: 1
"""


def metrics(run: Any) -> dict[tuple[str, str], Any]:
    return {(m.name, m.tags.get("phase", "")): m for m in run.metrics
            if m.tags.get("op") in (None, "read")}


def check(db: Path) -> None:
    """Every assertion on the step's results database."""
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = {r.workload: r for r in store.runs([row.id])}
    assert {w: str(r.status) for w, r in runs.items()} == dict.fromkeys(
        ("idle-cap", "idle-limit", "loaded"), "ok"), {w: r.error for w, r in runs.items()}
    for workload, limit in (("idle-cap", CAP), ("idle-limit", LIMIT_KIB * 1024)):
        run = runs[workload]
        got = metrics(run)
        fail = run.annotations["faults"]["events"][0]
        print(workload, {k[0]: (m.value, m.note) for k, m in got.items()
                         if k[0].startswith("rebuild")}, fail["facts"])
        assert fail["facts"]["bitmap"] == "none" and fail["facts"]["cap_bps"] == CAP
        size = fail["facts"]["member_kib"] * 1024
        expected = got[("rebuild_expected_seconds", "")].value
        assert expected == pytest.approx(size / min(CAP, limit))
        assert got[("rebuild_progress", "")].value == 1.0  # it ended within the run
        took = got[("rebuild_seconds", "")].value
        # Where the disks' cap binds md loses a fixed ~2.1 s per rebuild (measured on
        # 63 MiB and 255 MiB members alike: +13 % and +3.3 %, docs/faults.md), so the
        # member is 127 MiB: a rebuild of ~32 s, where that is ~7 %.
        # Needs no reference (our judgement): a 4 MiB/s cap or md's own limit sets the
        # time, far below what the member delivers unthrottled.
        within(f"rebuild {workload}: took over predicted", took / expected, low=0.85,
               high=1.15, reference=f"took {took:.1f} s, predicted {expected:.1f} s")
        # The share comes from the same progress samples as the length: both must say
        # the same rate (this is where rebuild_share is checked against a known rate).
        share = got[("rebuild_share", "")].value
        assert share == pytest.approx(size / took / CAP, rel=0.05), (share, took)
    loaded = metrics(runs["loaded"])
    rebuild = loaded[("rebuild_share", "")].value
    workload = loaded[("workload_share", "restore")].value
    print("loaded: rebuild share", rebuild, "workload share", workload)
    # md gives way to the workload's queued reads although speed_limit_min is at
    # 100000 KiB/s: the rebuild has had 5, 9 and 1.6 % of the cap in three boots and 0 %
    # in the CI run of 2026-11-25 (the workload 99.96 %), so its share may be nought; the
    # workload's is the most of it.
    # The shares from below over the lower of 1 and the idle-cap run's share of the same
    # cap in this step (its rebuild alone, at the cap: what the disks and the guest
    # delivered through it; 0.97 measured, md's fixed ~2.1 s per rebuild included); the
    # sum from above is the cap's (no load makes a capped disk faster).
    assert rebuild >= 0
    idle_share = metrics(runs["idle-cap"])[("rebuild_share", "")].value
    reference = min(1.0, idle_share)
    within("rebuild loaded: workload's share of the cap over the idle-cap run's",
           workload / reference, low=0.8,
           reference=f"rebuild's {rebuild:.3f}; idle-cap run's rebuild {idle_share:.3f}")
    # Both read the surviving member: together they take its cap, no more.
    within("rebuild loaded: both shares", rebuild + workload, high=1.1)
    within("rebuild loaded: both shares over the idle-cap run's", (rebuild + workload) / reference,
           low=0.85, reference=f"idle-cap run's rebuild {idle_share:.3f} of the cap")


@pytest.mark.lab
@pytest.mark.slow
def test_the_rebuild_takes_size_over_the_lowest_limit(shared_boot: dict[str, Any]) -> None:
    print(f"lab rebuild step: {shared_boot['steps']['rebuild']['seconds']:.0f} s")
    check(shared_boot["db"]("rebuild"))
