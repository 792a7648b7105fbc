"""Ground truth for a lab disk pulled out of the running VM and returned (faults/labdisk.py,
lab/faultbridge.py: QMP device_del, then blockdev-add + device_add), a step of the shared
boot (conftest.py, `pull`): fio 4k random reads QD16 for 21 s on disks of 100 IOPS.

- r1p, md RAID1 over p1 and p2: p2 pulled at 6 s for 8 s. Before, both mirrors serve:
  ~200 IOPS; pulled, md reads from p1 alone: ~100, with no I/O error, and md shows the
  array degraded. The return puts the disk back (same serial, its class's 100 IOPS as
  QEMU reports it) but not into the array: md does not take a member back by itself,
  and volbench leaves that to the user (docs/faults.md), so `after` stays at ~100.
- plainp, a plain disk p3 (fs: none): pulled at 6 s for 6 s. The kernel sets a deleted
  disk's capacity to 0, so every read fio sends after is at the end of the device and
  returns 0 bytes: no error (io_errors 0), no byte read, and no byte after the return
  either: fio's file descriptor belongs to the disk that went; the one that came back
  is a new device (measured: docs/faults.md).
- `again`, a run on each target after those: the plain target finds p3 again under its
  by-id link, now a new node, and reads it at its 100 IOPS (targets/disk.refind); the
  array, not re-assembled, still reads from one mirror.
The cap stays low so the emulated guest can deliver it on a loaded host."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from bounds import within
from volbench.store.db import Store

EXPERIMENT = """
name: lab-pull-and-return
lab:
  disks:
    - {name: p1, size: 300M, class: pull100}
    - {name: p2, size: 300M, class: pull100}
    - {name: p3, size: 300M, class: pull100}
  classes:
    pull100: {iops: 100}
targets:
  - {name: r1p, type: mdraid, level: raid1, fs: none,
     devices: [/dev/disk/by-id/virtio-p1, /dev/disk/by-id/virtio-p2]}
  - {name: plainp, type: disk, device: /dev/disk/by-id/virtio-p3, fs: none}
workloads:
  - name: reads
    tool: fio
    rw: randread
    bs: 4k
    iodepth: 16
    size: 128M
    runtime: 21s
    options: {continue_on_error: all, ignore_error: "EIO,ENXIO,ENODEV"}
    faults:
      - {at: 6s, action: pull, device: /dev/disk/by-id/virtio-p2, for: 8s}
      - {at: 6s, action: pull, device: /dev/disk/by-id/virtio-p3, for: 6s}
  - name: again
    tool: fio
    rw: randread
    bs: 4k
    iodepth: 16
    size: 128M
    runtime: 5s
repeat: 1
"""


def values(run: Any) -> dict[tuple[str, str], float | None]:
    return {(m.name, m.tags.get("phase", "")): m.value for m in run.metrics
            if m.tags.get("op") in (None, "read")}


def whole_iops(run: Any) -> float:
    """The run's read IOPS over all of it (not a window's)."""
    (value,) = [m.value for m in run.metrics if m.name == "iops" and m.tags == {"op": "read"}]
    return float(value)


def median_all(run: Any) -> float:
    """The median of the run's seconds (fio's log)."""
    (iops,) = [s for s in run.parsed.series if s.name == "iops"]
    assert len(iops.points) >= 3, iops.points
    return float(statistics.median(v for _, v in iops.points))


def median_before(run: Any) -> float:
    """The median of the run's whole seconds before its first fault was asked."""
    faults = run.annotations["faults"]
    offset, first = faults["tool_offset_s"], faults["events"][0]
    (iops,) = [s for s in run.parsed.series if s.name == "iops"]
    seconds = [v for t, v in iops.points if t <= first["started_s"] - offset]
    assert len(seconds) >= 3, iops.points
    return float(statistics.median(seconds))


def check_events(run: Any, disk: str) -> list[dict[str, Any]]:
    """The pull and its return happened, each step done, and the disk came back with its
    class's cap as QEMU reports it."""
    events = run.annotations["faults"]["events"]
    assert [(e["action"], e["phase"], e["error"]) for e in events][:2] == [
        ("pull", "pull", None), ("return", "after", None)], events
    pull, back = events[0]["commands"], events[1]["commands"]
    assert pull[0]["command"] == f"qmp pull {disk}" and '"device_del"' in pull[0]["output"]
    assert " gone after " in pull[1]["output"]
    answer = json.loads(back[0]["output"])
    assert [s["command"] for s in answer["steps"]] == [
        "blockdev-add", "device_add", "block_set_io_throttle"]
    assert answer["caps_now"]["iops"] == 100 and answer["caps_now"]["group"]
    assert " back after " in back[1]["output"]
    return list(events)


@pytest.mark.lab
@pytest.mark.slow
def test_a_pulled_raid1_member_and_a_pulled_plain_disk(shared_boot: dict[str, Any]) -> None:
    db = shared_boot["db"]("pull")
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        every = {(r.target, r.workload): r for r in store.runs([row.id], series=True)}
    assert {k: str(r.status) for k, r in every.items()} == dict.fromkeys(every, "ok"), {
        k: r.error for k, r in every.items()}
    runs = {target: every[(target, "reads")] for target in ("r1p", "plainp")}
    md = runs["r1p"]
    got = values(md)
    print({k: v for k, v in got.items() if k[1]})
    events = check_events(md, "p2")
    assert events[0]["commands"][2]["output"].startswith("md degraded after "), events[0]
    assert got[("io_errors", "")] == 0.0
    # Before: two mirrors of 100 IOPS (201.7 measured on a quiet host). The upper bound
    # is the two caps, from above (no load makes a capped disk faster).
    before = got[("iops", "before")]
    assert before is not None
    within("pull: raid1 of two 100-IOPS mirrors before (op/s)", before, high=210)
    # Paired from below: the plain disk p3 of the same class read by the same workload in
    # this step, its median second before its own pull. Every disk of this step is capped
    # at 100, so the guest's reach above 100 has no reference here (that would take an
    # uncapped disk and run): a guest that cannot read 140 op/s at all fails this check.
    plain_before = median_before(runs["plainp"])
    within("pull: raid1 of two mirrors before over a plain disk, median seconds",
           median_before(md) / plain_before, low=1.4,
           reference=f"plain disk {plain_before:.0f} op/s (median second before its pull)")
    # Pulled: the whole seconds inside the phase on fio's clock, but its first (the
    # change-over), read from one mirror.
    offset = md.annotations["faults"]["tool_offset_s"]
    start, end = events[0]["done_s"] - offset, events[1]["started_s"] - offset
    (iops,) = [s for s in md.parsed.series if s.name == "iops"]
    inside = [v for t, v in iops.points if start + 1 < t - 1 and t <= end]
    assert len(inside) >= 4, iops.points
    # An upper bound at the cap needs no reference. Paired from below: the plain disk of
    # the same class, its median second before its pull in this step.
    within("pull: raid1 on one mirror, whole seconds (op/s)", statistics.median(inside),
           high=1.1 * 100, reference=str(iops.points))
    within("pull: raid1 on one mirror over a plain disk, median seconds",
           statistics.median(inside) / plain_before, low=0.9,
           reference=f"plain disk {plain_before:.0f} op/s; {inside}")
    # Paired: the same run's seconds before the pull are the reference.
    within("pull: raid1 pulled over before", got[("iops", "pull")] / before,  # type: ignore[operator]
           high=0.6, reference=f"before {before:.1f} op/s")
    # Returned, not re-added: the array still reads from one mirror.
    within("pull: raid1 returned over before", got[("iops", "after")] / before,  # type: ignore[operator]
           high=0.6, reference=f"before {before:.1f} op/s")

    plain = runs["plainp"]
    got = values(plain)
    print({k: v for k, v in got.items() if k[1]})
    check_events(plain, "p3")
    assert got[("bw", "before")] > 0
    assert got[("bw", "pull")] == 0.0 and got[("bw", "after")] == 0.0  # not a byte read
    assert got[("io_errors", "")] == 0.0  # reads at the end of a 0-byte disk: no error
    # Those empty reads are not the disk's IOPS (engine/faultphases.without_empty).
    assert got[("iops", "pull")] == 0.0 and got[("empty_ios", "")] > 1000

    # The next run takes the returned disk under its new node, at the class's cap.
    again = every[("plainp", "again")]
    moved = again.annotations["device_moved"]
    print("again on plainp:", moved, whole_iops(again))
    assert moved["by"] == "/dev/disk/by-id/virtio-p3" and moved["to"] != moved["from"]
    # The next runs: an upper bound at the cap (the mean) needs no reference; from below
    # their median seconds are paired with the plain disk's median second before its pull
    # in this step, the same class read by the same workload.
    within("pull: returned disk's next run (op/s)", whole_iops(again), high=115)
    within("pull: returned disk's next run over before, median seconds",
           median_all(again) / plain_before, low=0.9,
           reference=f"plain disk before {plain_before:.0f} op/s")
    md_again = every[("r1p", "again")]
    assert "device_moved" not in md_again.annotations
    within("pull: raid1's next run, one mirror (op/s)", whole_iops(md_again), high=115)
    within("pull: raid1's next run over the plain disk before, median seconds",
           median_all(md_again) / plain_before, low=0.9,
           reference=f"plain disk before {plain_before:.0f} op/s")
