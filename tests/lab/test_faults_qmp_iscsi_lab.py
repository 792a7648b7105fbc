"""Ground truth for a lab disk slowed through QMP (faults/labdisk.py, lab/faultbridge.py)
and an iSCSI path cut (faults/iscsi.py), one boot: `volbench lab run` (CLI end to end).

- reads: 21 s of fio 4k random reads on a lab disk of 100 IOPS, slowed to 25 % (25 IOPS)
  from 6 s for 6 s. QEMU's throttle is the disk's
class, so the phases must show it: ~100 IOPS before, 25 while slow (after QEMU's
  one-second change-over), ~100 after, and no stall.
- writes: 24 s of fio 4k random writes QD4 on an iSCSI LUN (LIO over a lab disk), its path
  cut at 6 s for 5 s: less than the 15 s replacement_timeout volbench logs in with, so the
  initiator queues the writes: no I/O error, no write completes while the path is cut (a
  stall at least as long), and they complete again after it.
Each workload runs on both targets; the fault acts on its own target only.

The cap stays low so the emulated guest can deliver it on a loaded host (test_burst_lab.py
measured 790 of 1000 IOPS at a load average of 15)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from bounds import within
from volbench.store.db import Store

EXPERIMENT = """
name: lab-slow-disk-and-iscsi-cut
lab:
  disks:
    - {name: s1, size: 512M, class: capped}
    - {name: i1, size: 512M, class: capped}
  classes:
    capped: {iops: 100}
targets:
  - {name: plain, type: disk, device: /dev/disk/by-id/virtio-s1, fs: none}
  - {name: lun, type: iscsi, device: /dev/disk/by-id/virtio-i1, fs: none}
workloads:
  - name: reads
    tool: fio
    rw: randread
    bs: 4k
    iodepth: 16
    size: 256M
    runtime: 21s
    faults:
      - {at: 6s, action: slow, device: /dev/disk/by-id/virtio-s1, for: 6s, percent: 25}
  - name: writes
    tool: fio
    rw: randwrite
    bs: 4k
    iodepth: 4
    size: 64M
    runtime: 24s
    faults:
      - {at: 6s, action: cut, target: lun, for: 5s}
repeat: 1
"""


@pytest.mark.lab
@pytest.mark.slow
def test_a_slowed_lab_disk_and_a_cut_iscsi_path(shared_boot: dict[str, Any]) -> None:
    db = shared_boot["db"]("qmpiscsi")
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = {(r.target, r.workload): r for r in store.runs([row.id], series=True)}
    assert "faults" not in runs[("lun", "reads")].annotations  # a plain run
    assert "faults" not in runs[("plain", "writes")].annotations
    check_iscsi_cut(runs[("lun", "writes")])
    run = runs[("plain", "reads")]
    got = {(m.name, m.tags.get("phase", "")): m.value for m in run.metrics
           if m.tags.get("op") in (None, "read")}
    print({k: v for k, v in got.items() if k[1]})
    events = run.annotations["faults"]["events"]
    assert [(e["action"], e["phase"]) for e in events][:2] == [("slow", "slow"),
                                                                ("return", "after")]
    asked = events[0]["commands"][0]
    assert asked["returncode"] == 0 and '"iops": 25' in asked["output"], asked
    # The whole seconds inside the slow phase, on fio's clock, but its first and last:
    # QEMU's change-over (97 of 200 I/Os in one measured run: the I/Os in flight and the
    # bucket drain) and the return, which the guest learns of up to 1.6 s after the host
    # made it (the answer's trip over 9p on a loaded host).
    offset = run.annotations["faults"]["tool_offset_s"]
    start, end = (events[0]["done_s"] - offset, events[1]["started_s"] - offset)
    (iops,) = [s for s in run.parsed.series if s.name == "iops"]
    inside = [v for t, v in iops.points if start + 1 < t - 1 and t <= end]
    assert len(inside) >= 3, inside
    before = got[("iops", "before")]
    assert before is not None
    within("qmp slow: whole seconds at 25 (op/s)", statistics.median(inside), low=0.9 * 25,
           high=1.1 * 25, reference=str(iops.points))
    # Paired: the same run's seconds before the slow-down are the reference.
    within("qmp slow: slowed over before", got[("iops", "slow")] / before,  # type: ignore[operator]
           high=0.4, reference=f"before {before:.1f} op/s")
    # Before and after: the class's 100 IOPS is a ceiling the emulated guest reaches on
    # a quiet host (98.6 measured) but not on a loaded one (84 at load ~8, and 136 of 200
    # at 7.5); the slow level above is exact either way (25 IOPS is within any guest's
    # reach). Before: the cap from above (no load makes a capped disk faster); from below
    # its median second is paired with the same workload's median second on the LUN's
    # disk in this step (the same class of 100; a plain run), and after with before.
    within("qmp slow: before, class of 100 (op/s)", before, high=105)
    (lun,) = [s for s in runs[("lun", "reads")].parsed.series if s.name == "iops"]
    lun_median = statistics.median(v for _, v in lun.points)
    before_s = [v for t, v in iops.points if t <= events[0]["started_s"] - offset]
    assert len(before_s) >= 3, iops.points
    within("qmp slow: before over the LUN disk's run, median seconds",
           statistics.median(before_s) / lun_median, low=0.9,
           reference=f"LUN's disk {lun_median:.0f} op/s (median second); before {before_s}")
    within("qmp slow: after over before", got[("iops", "after")] / before,  # type: ignore[operator]
           low=0.85, high=1.15, reference=f"before {before:.1f} op/s")
    # fio's exit (4.5 s in one loaded run) is not a stall: the phase ends with fio's job.
    # No reference: a time held from above, and a guest stall of 2 s would break it. A
    # stall is whole seconds with no I/O on fio's clock; pairing it would need a clock of
    # the guest's own over the same seconds (a sampler), and this run keeps none.
    within("qmp slow: stall after (s)", got[("stall_seconds", "after")], high=2.0)  # type: ignore[arg-type]
    assert not {name for name, _ in got} & {"burst_seconds", "warmup_seconds"}


def check_iscsi_cut(run) -> None:  # type: ignore[no-untyped-def]
    got = {(m.name, m.tags.get("phase", "")): m.value for m in run.metrics
           if m.tags.get("op") in (None, "write")}
    print({k: v for k, v in got.items() if k[1]})
    events = run.annotations["faults"]["events"]
    cut, back = events[0], events[1]
    assert (cut["action"], cut["phase"], back["action"], back["phase"]) == (
        "cut", "cut", "restore", "after"), events
    assert cut["error"] is None and back["error"] is None
    assert cut["commands"][0]["command"].startswith("echo 0 > /sys/kernel/config/target/iscsi/")
    assert cut["facts"]["replacement_timeout_s"] == "15"
    outage = back["done_s"] - cut["done_s"]
    assert got[("io_errors", "")] == 0.0  # queued within the replacement timeout
    assert got[("iops", "cut")] == 0.0
    # Needs no reference: the writes cannot complete while the path is cut. The levels
    # before and after are floors far below the class's 100 IOPS.
    within("iscsi cut: stall over outage (s)", got[("stall_seconds", "")] - outage,  # type: ignore[operator]
           low=-1.0, reference=f"outage {outage:.1f} s")
    within("iscsi cut: before (op/s)", got[("iops", "before")], low=20)  # type: ignore[arg-type]
    within("iscsi cut: after (op/s)", got[("iops", "after")], low=20)  # type: ignore[arg-type]
