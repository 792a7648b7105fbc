"""Thin-volume first touch (issue 15, seed 004): a fresh thin volume shows a warm-up.

One step of the shared lab boot (`shared_boot`, tests/lab/conftest.py), one 45 s fio run of
random 4k writes over the first 64 MiB of a freshly created raw LVM thin volume (64k chunks,
zeroed: volbench's default `zero: true`), on a lab disk capped at 8 MiB/s (`bps: 8M`, no
IOPS cap). dm-thin zeroes a whole 64k chunk before the first write into it, so until all
1024 chunks of the area are provisioned most writes cost 64k of the disk's bandwidth instead
of 4k; after that every write is a rewrite of a provisioned chunk, at the cap's 2048 IOPS.

Measured (2026-11-24, software-emulated guest): 129, 149, 167, 194, 246, 291, 350, 596,
835, 1424, 1776, 1965, then 2,030-2,090 IOPS each second: detected as a warm-up of 9.1 s
at 329 IOPS, then 2,033 sustained; mean latency 24.1 ms in the warm-up, 3.9 ms after;
clat p99 83 ms against 14 ms. Over an 8 MiB area (128 chunks) the same run provisioned
everything within its first ~1.3 s (318 IOPS, then 1707), below the detector's 3 s
start-up floor: no warm-up found, so the area is 64 MiB.

A second run: warm-up 12.4 s at 739 IOPS (the loaded host's dips at 13-16 s moved the
boundary), 2,029 sustained; 10.8 ms against 3.9 ms mean, p99 90 ms against 11 ms; the
disk wrote 371.9 MB for fio's 304.3 MB: 64.5 MiB more, the 1024 chunks' zeroes.

Ground truth: the sustained level is the byte cap's 2048 4k writes a second (its best
seconds within ±10 %, its mean never above; on a busy host the guest's CPU, not the cap,
holds the mean lower); the
disk writes the area's 64 MiB of zeroes beyond fio's bytes (±15 %); and the warm-up lasts
as long as the cap needs to move those zeroes plus the window's own writes:
(64 MiB + warm-up IOPS × seconds × 4 KiB) / 8 MiB/s (±30 %; 9.5 s model vs 9.1 measured,
12.5 vs 12.4).
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from bounds import within
from support import ROOT
from volbench.store.db import Store

MiB = 2**20
AREA = 64 * MiB
CAP = 8 * MiB
EXPERIMENT = """
name: lab-thin-first-touch
lab:
  disks:
    - {{name: t1, size: 1G, class: bw8}}
  classes:
    bw8: {{bps: 8M}}
targets:
  - {{name: thin, type: lvm, layout: thin, devices: [/dev/disk/by-id/virtio-t1], fs: none,
     chunk_size: 64k}}
workloads:
  - {{name: touch, tool: fio, jobfile: {jobfile}}}
repeat: 1
"""


def experiment_text() -> str:
    """EXPERIMENT with this folder's job file."""
    return EXPERIMENT.format(jobfile=ROOT / "tests" / "lab" / "thin-first-touch.fio")


@pytest.mark.lab
@pytest.mark.slow
def test_first_writes_to_a_fresh_thin_volume_are_a_warmup(shared_boot: dict[str, Any]) -> None:
    db = shared_boot["db"]("thin")
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        (run,) = store.runs([row.id], series=True)
    got = {(m.name, m.tags.get("window", "")): m.value for m in run.metrics
           if m.tags.get("op") == "write"}
    points = [(t, v) for s in run.parsed.series if s.name == "iops" for t, v in s.points]
    series = [v for _, v in points]
    seconds = shared_boot["steps"]["thin"]["seconds"]
    print(f"lab thin step: {seconds:.0f} s; per-second IOPS {series}; {got}")
    device = run.annotations["device_io"]
    print(f"device I/O {device}; fio wrote {got[('io_bytes', '')]:.0f} B")
    # The chunks' zeroes: the disk wrote the area once more than fio did.
    assert device["write_bytes"] - got[("io_bytes", "")] == pytest.approx(AREA, rel=0.15)
    assert ("warmup_seconds", "") in got, got
    low, high, seconds = (got[("iops", "warmup")], got[("iops", "sustained")],
                          got[("warmup_seconds", "")])
    # The cap is the ceiling: the sustained mean never above it, and the sustained window's
    # best seconds (its 90th percentile) at it. Not the mean at it: 2048 IOPS is near what
    # the emulated guest can issue, and beside a second VM at load 9.4 (2026-11-28) its
    # sustained mean was 0.80 of the cap while its best seconds read 2033-2077.
    after = [v for t, v in points if t > seconds]
    best = statistics.quantiles(after, n=10)[-1]
    # The first bound is the cap, from above (no load makes a capped disk faster). The
    # best seconds' 0.9 has no reference: pairing it needs the guest's reach at 4k writes
    # measured in this step (an uncapped linear or thin volume's run beside this one, a
    # new disk and run), and this step has one disk under one cap. A guest that cannot
    # issue 2048 IOPS in its best seconds fails it.
    within("thin first touch: sustained over the byte cap's rate", high / (CAP / 4096),
           high=1.1, reference=f"best seconds {best:.0f} op/s")
    within("thin first touch: sustained's best seconds over the cap's rate",
           best / (CAP / 4096), low=0.9, high=1.1, reference=f"{len(after)} seconds")
    # Paired: the same run's warm-up against its sustained level.
    within("thin first touch: sustained over warm-up", high / low, low=2.0)
    within("thin first touch: warm-up length over the zeroing's (s)",
           seconds / ((AREA + low * seconds * 4096) / CAP), low=0.7, high=1.3,
           reference=f"warm-up {low:.0f} op/s for {seconds:.1f} s")
    # Latency per window: first writes wait for their chunk's zeroing.
    # Paired: warm-up and sustained windows of the same run.
    within("thin first touch: warm-up latency over sustained",
           got[("lat_mean", "warmup")] / got[("lat_mean", "sustained")], low=2.0)
    within("thin first touch: warm-up p99 over sustained",
           got[("clat_p99", "warmup")] / got[("clat_p99", "sustained")], low=1.0)
