"""Ground truth for faults in the lab: every fault test in one experiment, one step of
the shared boot (tests/lab/conftest.py: `volbench run` of EXPERIMENT in the guest).

One experiment on two 300M disks of 150 IOPS each as md RAID1, and NFSv3 (hard mount)
on a fast disk (disk names fm1, fm2, fn1, fd1, ft1: unique across the shared boot):

- reads (fio 4k random reads, QD16, 30 s) on the RAID1: member fm2 failed at 8 s and
  added back at 18 s (md's speed limits set to 20 MB/s for the rebuild). Before, both
  mirrors serve: ~300 IOPS; degraded, one disk: ~150. (Two 500-IOPS disks give 1002 vs
  500.6 on an idle host, MACHINE-NOTES; with the host loaded to a load average of 12 the
  emulated guest delivered 318 of those 1000, so the caps here stay within its reach.)
- writes (fio 4k random writes, QD4, 30 s) on NFSv3: nfsd stopped at 8 s for 15 s.
  A hard mount: no I/O error, a stall at least as long as the outage (from `rpc.nfsd 0`
  done to `rpc.nfsd 8` done: in the loaded VM each took ~15 s, so the outage was 16 s),
  the level after on its own (with the default timeo=600 no writes came back within 52 s
  and fio's 30 s run ended after 89 s; the mount now says timeo=50, 5 s).
The runs of each workload on the other target are plain runs (no fault, no phases).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from volbench.store.db import Store

EXPERIMENT = """
name: lab-faults
lab:
  disks:
    - {name: fm1, size: 300M, class: slow}
    - {name: fm2, size: 300M, class: slow}
    - {name: fn1, size: 1G, class: fast}
    - {name: fd1, size: 300M, class: fast}
    - {name: ft1, size: 300M, class: fast}
  classes:
    slow: {iops: 150, bps: 50M}
targets:
  - {name: r1, type: mdraid, level: raid1, fs: none,
     devices: [/dev/disk/by-id/virtio-fm1, /dev/disk/by-id/virtio-fm2]}
  # timeo=50: the client retries 5 s after a lost request instead of 60 s, so the writes
  # come back within seconds of the restart and the run ends near its 30 s (was 89 s).
  - {name: n3, type: nfs, version: 3, device: /dev/disk/by-id/virtio-fn1,
     mount_options: [hard, nolock, timeo=50]}
  - {name: lv1, type: lvm, devices: [/dev/disk/by-id/virtio-fd1], fs: none}
  # A pool a little larger than the 128M the runs lay out: little to fill (the fill of
  # 128M free took 46 s with its LVM steps in the loaded VM, longer than the run).
  - {name: t1, type: lvm, layout: thin, lv_size: 160M, devices: [/dev/disk/by-id/virtio-ft1],
     fs: none}
workloads:
  - name: reads
    tool: fio
    rw: randread
    bs: 4k
    iodepth: 16
    size: 128M
    runtime: 30s
    faults:
      - {at: 8s, action: fail, device: /dev/disk/by-id/virtio-fm2,
         speed_limit_min: 20000, speed_limit_max: 20000}
      - {at: 18s, action: restore, device: /dev/disk/by-id/virtio-fm2}
      - {at: 8s, action: delay, target: lv1, for: 8s, delay_ms: 100}
  - name: writes
    tool: fio
    rw: randwrite
    bs: 4k
    iodepth: 4
    size: 64M
    runtime: 30s
    # fio goes on past EIO by itself with continue_on_error; ENOSPC it must be told.
    options: {continue_on_error: all, ignore_error: "EIO,EIO:ENOSPC"}
    faults:
      - {at: 8s, action: stop, target: n3, for: 15s}
      - {at: 8s, action: errors, target: lv1, for: 5s}
      - {at: 5s, action: exhaust, target: t1, for: 15s, error_if_no_space: 1}
repeat: 1
"""


def values(run) -> dict[tuple[str, str], float | None]:  # type: ignore[no-untyped-def]
    return {(m.name, m.tags.get("phase", "")): m.value for m in run.metrics
            if m.tags.get("op") in (None, "read", "write") and "after" not in m.tags}


@pytest.mark.lab
@pytest.mark.slow
def test_faults_in_the_lab(shared_boot: dict[str, Any]) -> None:
    print(f"lab faults step: {shared_boot['steps']['faults']['seconds']:.0f} s")
    check(shared_boot["db"]("faults"))


def check(db: Path) -> None:
    """Every assertion on one boot's results database (kept apart from the boot so a
    stored database can be checked again)."""
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = {(r.target, r.workload): r for r in store.runs([row.id], series=True)}
    assert all(str(r.status) == "ok" for r in runs.values()), {
        k: r.error for k, r in runs.items()}

    raid = runs[("r1", "reads")]
    got = values(raid)
    events = raid.annotations["faults"]["events"]
    print("raid1:", {k: v for k, v in got.items() if k[1]}, events)
    assert [(e["action"], e["phase"], e["error"]) for e in events] == [
        ("fail", "fail", None), ("restore", "restore", None)]
    before, fail = got[("iops", "before")], got[("iops", "fail")]
    assert before is not None and fail is not None
    offset = raid.annotations["faults"]["tool_offset_s"]
    start, end = events[0]["done_s"] - offset, events[1]["started_s"] - offset
    (series,) = [s for s in raid.parsed.series if s.name == "iops"]
    # Both mirrors: the median of the whole seconds before the fail was asked. Its upper
    # bound is the two caps, from above (no load makes a capped disk faster). Paired from
    # below: over the lower of the two caps and the guest's reach, the median second of
    # the same workload on the uncapped fast disk t1 in the same step (a plain run).
    both = [v for t, v in series.points if t <= events[0]["started_s"] - offset]
    assert len(both) >= 4, series.points
    ((reach_s,),) = [[[v for _, v in s.points] for s in runs[("t1", "reads")].parsed.series
                      if s.name == "iops"]]
    reach = statistics.median(reach_s)
    within("md raid1: both mirrors, median second (op/s)", statistics.median(both),
           high=1.1 * 300, reference=str(series.points))
    within("md raid1: both mirrors, median second over the lower of 300 and the guest's "
           "reach", statistics.median(both) / min(300, reach), low=0.9,
           reference=f"uncapped disk t1 {reach:.0f} op/s (median second); {both}")
    # One mirror serves at its class's cap: the median of the whole seconds between the
    # fail done and the restore asked (the mean would take in a host stall: in the CI run
    # of 2026-11-28, at a host load of 3.4 with 13 % steal at worst, four seconds ran at
    # 101-111 and the mean was 134.2 against seconds of 149). An upper bound at the cap
    # needs no reference. From below it is paired with the same run's seconds before the
    # fail (half of them). That pairing cannot absorb a slow-down of this phase alone: in
    # the CI run of 2026-11-28 (the host's loop disks saturating its disk, the lab's image
    # reads queued behind them) one mirror read 63-111 op/s for 10 s against 277-323
    # before and t1's 2000 afterwards: it fails there, as it should (the disk did not
    # deliver its class), and no in-run reference could make it pass.
    inside = [v for t, v in series.points if start <= t - 1 and t <= end]
    assert len(inside) >= 6, series.points
    one = statistics.median(inside)
    within("md raid1: one mirror, median second (op/s)", one, high=1.1 * 150,
           reference=str(series.points))
    within("md raid1: one mirror over both, median seconds", one / statistics.median(both),
           low=0.45, reference=f"both {statistics.median(both):.1f}, one {one:.1f} op/s")
    # An upper bound at the cap needs no reference: no load makes a capped disk faster.
    within("md raid1: one mirror, mean (op/s)", fail, high=1.1 * 150)
    # Paired: the same run's seconds before the fail are the reference.
    within("md raid1: degraded over both", fail / before, low=0.42, high=0.58,
           reference=f"before {before:.1f}, degraded {fail:.1f} op/s")
    assert got[("rebuild_progress", "")] is not None
    assert events[0]["facts"]["speed_limits"]["speed_limit_min"] > 0

    nfs = runs[("n3", "writes")]
    got = values(nfs)
    events = nfs.annotations["faults"]["events"]
    print("nfs:", {k: v for k, v in got.items() if k[1]}, events)
    assert [(e["action"], e["phase"]) for e in events] == [("stop", "stop"), ("start", "after")]
    assert "hard" in events[0]["facts"]["mount_options"]
    # The schedule's 15 s is the test's own: no reference needed.
    assert events[1]["asked_s"] - events[0]["asked_s"] == pytest.approx(15.0)
    # The server is down from the end of `rpc.nfsd 0` until `rpc.nfsd 8` starts its threads,
    # which is before that command returns (it returned 1.6 s after it started, and writes
    # had already resumed): the outage the client saw is at least stop's end to start's start.
    outage = events[1]["started_s"] - events[0]["done_s"]
    # The schedule kept its 15 s; `rpc.nfsd 0` itself took 1.1-14.5 s in the loaded VM, so
    # the outage is whatever is left of them (13.6 s seen), and the stall at least that.
    within("nfs stop: schedule (s)", events[1]["started_s"] - events[0]["started_s"], low=14.5)
    stall = got[("stall_seconds", "")]
    # Needs no reference: the writes cannot resume before the server is back.
    assert stall is not None
    within("nfs stop: stall over outage (s)", stall - outage, low=-1.0,  # whole log seconds
           reference=f"outage {outage:.1f} s, stall {stall:.1f} s")
    assert got[("iops", "stop")] == 0.0
    assert got[("io_errors", "")] == 0  # a hard mount: the writes wait, none fails
    # The level after is reported on its own; it need not equal before (the client
    # retransmits after its timeo, 5 s here and growing: the writes may not be back yet).
    assert ("iops", "after") in got
    assert "faults" not in runs[("n3", "reads")].annotations
    assert "faults" not in runs[("r1", "writes")].annotations
    for run in (raid, nfs):  # a RAID1 member and a hard-mount outage lose nothing
        verify = run.annotations["faults"]["verify"]
        assert verify["nothing_lost"] is True, verify
        assert verify["expected"] == "nothing lost"
    dm_faults(runs)
    thin_exhausted(runs)


def dm_faults(runs) -> None:  # type: ignore[no-untyped-def]
    """dm-delay adds its 100 ms to every read while in effect; dm-flakey (down) fails
    every write, counted with continue_on_error, and the LV's own table comes back."""
    delayed = runs[("lv1", "reads")]
    got = values(delayed)
    events = delayed.annotations["faults"]["events"]
    print("dm delay:", {k: v for k, v in got.items() if k[1]}, events)
    assert [(e["action"], e["phase"], e["error"]) for e in events] == [
        ("delay", "delay", None), ("heal", "after", None)]
    assert " delay " in events[0]["facts"]["fault_table"]
    assert events[0]["facts"]["table"].split()[2] == "linear"
    before, during = got[("lat_mean", "before")], got[("lat_mean", "delay")]
    assert during is not None and before is not None
    # Needs no reference: dm-delay's 100 ms is a floor no load can lower.
    within("dm delay: mean latency while delayed (s)", during, low=0.100)  # each read 100 ms
    # (queueing at the disk before shrinks the difference)
    within("dm delay: over before (s)", during - before, low=0.050,
           reference=f"before {before:.4f} s")
    failing = runs[("lv1", "writes")]
    got = values(failing)
    events = failing.annotations["faults"]["events"]
    print("dm errors:", {k: v for k, v in got.items() if k[1]}, events)
    # fio ended its 30 s run after about 31 000 errors in three boots of four (11-16 s
    # in; not explained): the heal then comes at the run's teardown.
    assert [(e["action"], e["error"]) for e in events] == [("errors", None), ("heal", None)]
    assert events[0]["phase"] == "errors" and events[1]["phase"] in ("after", "teardown")
    errors = next(m for m in failing.metrics if m.name == "io_errors")
    assert errors.value is not None and errors.value > 0
    assert "errno 5" in errors.note  # EIO
    # The writes after `heal` are not asserted: in one boot they ran at 882 IOPS, in the
    # others fio had ended (above).
    # Writes that failed were reported to fio; what it was told was written is there.
    assert failing.annotations["faults"]["verify"]["nothing_lost"] is True


def thin_exhausted(runs) -> None:  # type: ignore[no-untyped-def]
    """A full thin pool with error_if_no_space: writes that need a new chunk fail with
    ENOSPC at once, counted; once freed, writes go on and nothing written is lost."""
    full = runs[("t1", "writes")]
    got = values(full)
    recorded = full.annotations["faults"]
    events = recorded["events"]
    print("thin exhaust:", {k: v for k, v in got.items() if k[1]}, events,
          recorded["samples"][:12])
    # `free` is asked for at 20 s, but it waits for exhaust's own LVM steps: they took 20 s
    # in a loaded VM, and more than 25 s on a busy machine with a second VM beside it
    # (2026-11-28: `free` began after fio's 30 s, at the run's teardown). What is judged
    # does not depend on when: ENOSPC while full, the pool writable again, nothing lost.
    assert [(e["action"], e["error"]) for e in events] == [("exhaust", None), ("free", None)]
    assert events[0]["phase"] == "exhaust" and events[1]["phase"] in ("after", "teardown")
    assert events[0]["facts"]["when_full"] == "error_if_no_space"
    pools = [s["thin_pool"] for s in recorded["samples"] if s.get("thin_pool")]
    assert any(p["free_chunks"] == 0 for p in pools), pools  # the pool was full
    errors = next(m for m in full.metrics if m.name == "io_errors")
    assert errors.value is not None and errors.value > 0
    assert "errno 28" in errors.note  # ENOSPC
    # Free again: the pool writes (rw) with chunks to give. The level after `free` is not
    # asserted: exhaust's LVM steps took 20 s in the loaded VM, `free` ended after the run.
    assert pools[-1]["mode"] == "rw" and pools[-1]["free_chunks"] > 0, pools
    assert recorded["verify"]["nothing_lost"] is True
