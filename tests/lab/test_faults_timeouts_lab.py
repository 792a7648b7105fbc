"""Ground truth for faults that outlast a kernel timeout (a shared-boot step, `timeouts`):

- queue: 70 s of fio 4k random writes QD4 on a thin volume whose pool queues when full
  (`error_if_no_space: 0`), exhausted at 3 s with dm-thin's no_space_timeout set to 6 s,
  freed at 63 s. The writes that need a chunk wait in the pool: no write completes
  for the 6 s of the timeout, then the pool fails them with ENOSPC (counted) and fails
  further ones at once until `free`; writes to chunks the volume owns go on. The stall
  ends long before `free`: the timeout ended it. (The pool runs out of space in queue
  mode inside exhaust's last step, when LVM loads the queueing table: the stall begins
  before the step ends, and the phase `exhaust` opens when it has ended.)
- longcut: the same writes on an iSCSI LUN whose initiator logs in with a 5 s
  replacement_timeout, its path cut at 5 s for 12 s: the initiator queues the writes for
  5 s, then fails them (EIO / ENOLINK, counted) until it logs in again after `restore`;
  the session goes FAILED (its disk blocked) -> FREE (the disk transport-offline) about
  5 s after the cut -> LOGGED_IN (running). (The short cut, 5 s under 15 s, is
  test_faults_qmp_iscsi_lab.py's: no error.)
One workload, its two faults each on its own target: two runs, both faulted.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bounds import within
from volbench.store.db import Store

NO_SPACE_TIMEOUT_S = 6
REPLACEMENT_TIMEOUT_S = 5

EXPERIMENT = f"""
name: lab-fault-timeouts
lab:
  disks:
    - {{name: tq1, size: 300M, class: fast}}
    - {{name: il1, size: 300M, class: fast}}
targets:
  # 32M (512 chunks of 64k) free beside the 64M laid out: a short fill.
  - {{name: queue, type: lvm, layout: thin, lv_size: 96M, devices: [/dev/disk/by-id/virtio-tq1],
     fs: none}}
  - {{name: longcut, type: iscsi, device: /dev/disk/by-id/virtio-il1, fs: none,
     replacement_timeout: {REPLACEMENT_TIMEOUT_S}s}}
workloads:
  - name: writes
    tool: fio
    rw: randwrite
    bs: 4k
    iodepth: 4
    size: 64M
    runtime: 70s
    # Errors fio goes on past, per kind (read,write) and ':' between errors: EIO; EIO,
    # ENOSPC (the full pool) and ENOLINK (67, fio has no name for it: the I/O the
    # initiator held when its replacement_timeout ran out).
    options: {{continue_on_error: all, ignore_error: "EIO,EIO:ENOSPC:67"}}
    faults:
      # exhaust's LVM steps took 28-44 s in the VM at a host load of 7: free comes late.
      - {{at: 3s, action: exhaust, target: queue, for: 60s, error_if_no_space: 0,
         no_space_timeout: {NO_SPACE_TIMEOUT_S}s}}
      - {{at: 5s, action: cut, target: longcut, for: 12s}}
repeat: 1
"""


def values(run: Any) -> dict[tuple[str, str], Any]:
    return {(m.name, m.tags.get("phase", "")): m for m in run.metrics
            if m.tags.get("op") in (None, "write") and "after" not in m.tags}


@pytest.fixture(scope="module")
def runs(shared_boot: dict[str, Any]) -> dict[str, Any]:
    with Store(shared_boot["db"]("timeouts"), create=False) as store:
        (row,) = store.experiments()
        return {r.target: r for r in store.runs([row.id], series=True)}


@pytest.mark.lab
@pytest.mark.slow
def test_a_queueing_thin_pool_stalls_for_no_space_timeout_then_fails(
        runs: dict[str, Any]) -> None:
    run = runs["queue"]
    got, recorded = values(run), run.annotations["faults"]
    events = recorded["events"]
    print("queue:", {k: m.value for k, m in got.items()}, events, recorded["samples"])
    assert [(e["action"], e["phase"], e["error"]) for e in events] == [
        ("exhaust", "exhaust", None), ("free", "after", None)]
    facts = events[0]["facts"]
    assert facts["when_full"] == "queue_if_no_space"
    assert facts["no_space_timeout_s"] == NO_SPACE_TIMEOUT_S
    assert events[0]["commands"][0]["command"] == (
        f"echo {NO_SPACE_TIMEOUT_S} > /sys/module/dm_thin_pool/parameters/no_space_timeout")
    stall = got[("stall_seconds", "")].value
    # Needs no reference: the kernel's no_space_timeout sets the stall (whole log seconds).
    within("thin queue: stall (s)", stall, low=NO_SPACE_TIMEOUT_S - 1.5,
           high=NO_SPACE_TIMEOUT_S + 1.5)
    # It ended before `free` began: the pool failed the queued writes by itself.
    (iops,) = [s for s in run.parsed.series if s.name == "iops"]
    busy = [t for t, v in iops.points if v > 0]
    # Paired: the log's gap against the stall of the same run.
    gap, resumed = max((b - a, b) for a, b in itertools.pairwise(busy))
    within("thin queue: gap in the log less the stall (s)", gap - 1 - stall, low=-1.0,
           high=1.0, reference=f"stall {stall:.1f} s")
    assert resumed + recorded["tool_offset_s"] < events[1]["started_s"]
    errors = got[("io_errors", "")]
    assert errors.value and "errno 28" in errors.note  # ENOSPC
    # The timeout has flipped the kernel's pool to failing writes; LVM's setting stays
    # queue, and `free` (its refresh) made the pool queue again.
    pools = [s["thin_pool"] for s in recorded["samples"] if s.get("thin_pool")]
    assert any(p["mode"] == "out_of_data_space" and p["when_full"] == "error_if_no_space"
               for p in pools), pools
    # Freed (its LVM steps took 15 s in the loaded VM, past the run's end): chunks to give.
    assert pools[-1]["mode"] == "rw" and pools[-1]["when_full"] == "queue_if_no_space", pools
    assert pools[-1]["free_chunks"] > 0, pools
    assert recorded["verify"]["nothing_lost"] is True


@pytest.mark.lab
@pytest.mark.slow
def test_an_iscsi_cut_longer_than_replacement_timeout_fails_the_io(
        runs: dict[str, Any]) -> None:
    run = runs["longcut"]
    got, recorded = values(run), run.annotations["faults"]
    events, samples = recorded["events"], recorded["samples"]
    print("longcut:", {k: m.value for k, m in got.items()}, events, samples)
    cut, back = events[0], events[1]
    assert [(e["action"], e["phase"], e["error"]) for e in events] == [
        ("cut", "cut", None), ("restore", "after", None)]
    assert cut["facts"]["replacement_timeout_s"] == str(REPLACEMENT_TIMEOUT_S)
    # The kernel failed the queued I/O when the timeout ran out: the disk's state.
    offline = [s["t"] for s in samples if s["iscsi_path"]["disk"] == "transport-offline"]
    assert offline, samples
    # Needs no reference: the kernel's replacement_timeout sets the offline moment.
    within("iscsi long cut: offline after the cut (s)", offline[0] - cut["done_s"],
           low=REPLACEMENT_TIMEOUT_S - 1.5, high=REPLACEMENT_TIMEOUT_S + 2.5)
    # Back online within three of the sampler's periods after the restore, the period
    # measured in this run: the longest gap between its samples from the cut to the first
    # one that saw the disk running again (~1 s on a quiet guest, the 3 s this bound was;
    # a slow guest stretches its own sampler's period as it stretches the login).
    times = [s["t"] for s in samples]
    running = next(t for t in times if t > offline[-1])
    around = [t for t in times if cut["done_s"] <= t <= running]
    period = max(b - a for a, b in itertools.pairwise(around))
    within("iscsi long cut: offline until, in sampler periods after restore",
           (offline[-1] - back["done_s"]) / period, high=3,
           reference=f"sampler period {period:.2f} s (longest gap from the cut on)")
    errors = got[("io_errors", "")]
    assert errors.value and ("errno 5 " in errors.note or "errno 67 " in errors.note)
    # No write completed from the cut until the login after `restore` (failed writes are
    # not completions), and the writes came back.
    # Needs no reference: no write completes while the path is cut; 20 op/s is a floor.
    within("iscsi long cut: stall over the cut (s)",
           got[("stall_seconds", "")].value - (back["done_s"] - cut["done_s"]), low=-1.5)
    assert samples[-1]["iscsi_path"] == {"session": "LOGGED_IN", "disk": "running"}
    within("iscsi long cut: after (op/s)", got[("iops", "after")].value, low=20)
