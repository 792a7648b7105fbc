"""What the machine was doing during one run: the facts that explain noisy repetitions.

pyperf's metadata collection is the model: cheap reads of /proc and /sys before and after
each run, stored with the run (runs.annotations["activity"], a JSON column: no schema
change). Static host facts (CPU model, kernel, memory) are recorded once per experiment
elsewhere; this module keeps what changes from run to run:

- load average (1 min) at the start and at the end;
- CPU busy time of the whole machine during the run, less the workload's own processes
  (their user + system time): work by other processes (for pgbench this includes the
  PostgreSQL server, which volbench does not count as the workload's own; kernel threads
  that do the workload's I/O, such as the loop driver's workers, count here too, so a
  fast loop-disk run shows some "other" CPU on a quiet machine: the load average, which
  counts runnable tasks, is the second opinion report/noise.py also reads);
- steal time (a virtual machine whose host is busy);
- the CPU frequency governor and the vm.dirty_* writeback settings (they change between
  runs only when someone changes them, which is exactly what a reader must know);
- the throttle caps of the target's cgroup, if it has one.

Every read tolerates a missing file (containers, other kernels): the field is left out.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.system import procfs

PROC_STAT = "/proc/stat"
LOADAVG = "/proc/loadavg"
GOVERNOR = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
VM_DIRTY = ("dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes",
            "dirty_expire_centisecs", "dirty_writeback_centisecs")
CAP_FILES = ("blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device",
             "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "io.max")


@dataclass(frozen=True)
class Snapshot:
    """Counters at one moment: wall clock, CPU ticks (busy, steal, all), load average."""

    at: float
    busy_ticks: int
    steal_ticks: int
    total_ticks: int
    load1: float | None


def parse_cpu_line(text: str) -> tuple[int, int, int] | None:
    """(busy, steal, total) ticks from /proc/stat's aggregate `cpu` line; None if absent.

    Busy is everything but idle and iowait; steal is counted apart (time the hypervisor
    gave to someone else) and not in busy."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(x) for x in fields[1:] if x.isdigit()]
            if len(ticks) < 4:
                return None
            idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
            steal = ticks[7] if len(ticks) > 7 else 0
            # guest and guest_nice (8, 9) are already inside user and nice.
            total = sum(ticks[:8])
            return total - idle - steal, steal, total
    return None


def parse_load1(text: str) -> float | None:
    """The 1-minute load average from /proc/loadavg's text."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


def snapshot() -> Snapshot:
    """The counters now (zeros when /proc/stat cannot be read)."""
    cpu = parse_cpu_line(procfs.read_text(PROC_STAT)) or (0, 0, 0)
    return Snapshot(time.time(), *cpu, parse_load1(procfs.read_text(LOADAVG)))


def settings() -> dict[str, Any]:
    """Governor and vm.dirty_* as found now (absent files are left out)."""
    found: dict[str, Any] = {}
    governor = procfs.read_text(GOVERNOR).strip()
    if governor:
        found["governor"] = governor
    dirty = {}
    for name in VM_DIRTY:
        text = procfs.read_text(f"/proc/sys/vm/{name}").strip()
        if text.isdigit():
            dirty[name] = int(text)
    if dirty:
        found["vm_dirty"] = dirty
    return found


def cgroup_caps(cgroup: Path | None) -> dict[str, str]:
    """The throttle settings of the target's cgroup, file name -> content (non-empty only)."""
    if cgroup is None:
        return {}
    caps = {}
    for name in CAP_FILES:
        text = procfs.read_text(cgroup / name).strip()
        if text:
            caps[name] = text
    return caps


def record(before: Snapshot, after: Snapshot, own_cpu_seconds: float,
           cgroup: Path | None = None) -> dict[str, Any]:
    """The run's activity record (JSON-ready): what ran beside the workload, in CPUs.

    `other_cpus` is the busy CPU time of the whole machine less the workload's own, per
    second of the run (1.0 = one core kept busy by something else); never below 0 (tick
    granularity and processes that ended mid-run make small negatives)."""
    wall = max(after.at - before.at, 1e-9)
    hz = os.sysconf("SC_CLK_TCK")
    busy = (after.busy_ticks - before.busy_ticks) / hz
    steal = (after.steal_ticks - before.steal_ticks) / hz
    out: dict[str, Any] = {
        "seconds": round(wall, 3),
        "cpus": os.cpu_count() or 1,
        "other_cpus": round(max(0.0, busy - own_cpu_seconds) / wall, 3),
        "steal_cpus": round(max(0.0, steal) / wall, 3),
    }
    if before.load1 is not None:
        out["load1_start"] = before.load1
    if after.load1 is not None:
        out["load1_end"] = after.load1
    out.update(settings())
    caps = cgroup_caps(cgroup)
    if caps:
        out["cgroup_caps"] = caps
    return out
