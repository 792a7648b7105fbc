"""Disk classes on one machine: cgroup v1 blkio throttling of a target's devices.

The workload's processes (and a database server's) join the cgroup before they
exec (proc.py), so their I/O to the listed devices is capped. Buffered
writeback done later by kernel flusher threads is *not* throttled in cgroup v1
(MACHINE-NOTES); targets therefore record how the cap was enforced so a report
can say so.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.limits import Limits
from volbench.core.errors import ResourceError
from volbench.system import proc, procfs
from volbench.system.block.devices import device_number
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe

BLKIO = Path("/sys/fs/cgroup/blkio")
HIERARCHY = "blkio"
# How long members get after SIGTERM before SIGKILL, and to leave at all.
GRACE = 2.0
EMPTY_TIMEOUT = 30.0


def available() -> str | None:
    """None if blkio throttling works here, else why not."""
    if not (BLKIO / "blkio.throttle.read_iops_device").exists():
        return ("cgroup v1 blkio throttling is not mounted at /sys/fs/cgroup/blkio; "
                "disk classes (limits:) need it")
    if os.geteuid() != 0:
        return "throttling needs root"
    return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def make_throttle(scope: Scope, recipe: Recipe, name: str, devices: list[str],
                  limits: Limits) -> Path:
    """A blkio cgroup capping every device in `devices`; returns its directory."""
    why = available()
    if why:
        raise ResourceError(why)
    # Inside the run's cgroup (containment.py) when there is one: a process is in one
    # cgroup per hierarchy, and this keeps the workload in the run's subtree. v1
    # blk-throttle is flat, so the limits apply to this group's processes as before.
    path = (proc.containment() or BLKIO) / f"volbench-{os.getpid()}-{_safe(name)}"
    scope.add("cgroup", path=str(path))
    recipe.run(["mkdir", "-p", str(path)], timeout=10)
    for device in devices:
        number = device_number(device)
        for knob, value in limits.items():
            recipe.write(path / f"blkio.throttle.{knob}_device", f"{number} {value}")
    return path


def serviced(path: Path) -> dict[str, int]:
    """I/Os the cgroup issued so far, by direction (Read/Write), over all devices."""
    totals: dict[str, int] = {}
    try:
        text = (path / "blkio.throttle.io_serviced").read_text()
    except OSError:
        return totals
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("Read", "Write"):
            totals[parts[1]] = totals.get(parts[1], 0) + int(parts[2])
    return totals


def relative(path: Path) -> str:
    """The cgroup's path as /proc/PID/cgroup shows it."""
    return "/" + str(path.relative_to(BLKIO))


def end_members(path: Path, keep: Path | None = None, timeout: float = EMPTY_TIMEOUT) -> None:
    """End every process in `path` and the cgroups below it (but not in `keep`); raise
    OSError naming those that would not end.

    Read until empty: a member may fork while it is being signalled, and the new child is
    in the cgroup too. SIGTERM first (a server gets to exit cleanly), SIGKILL after GRACE
    seconds. Only PIDs read from our cgroup are signalled, each checked through a pidfd."""
    def members() -> list[int]:
        spared = set(procfs.cgroup_pids(keep)) if keep is not None else set()
        return [p for p in procfs.cgroup_pids(path) if p != os.getpid() and p not in spared]

    def send(sig: int) -> bool:
        for pid in members():
            procfs.signal_cgroup_member(pid, sig, HIERARCHY, relative(path))
        return True

    if not procfs.escalate(send, lambda: bool(members()), GRACE, timeout - GRACE,
                           resend=True):
        raise OSError(f"processes {', '.join(map(str, members()))} in {path} did not end "
                      f"within {timeout:g} s")


def remove(path: Path) -> None:
    """End the cgroup's processes, then remove it and the cgroups below it (deepest first)."""
    if not path.exists():
        return
    end_members(path)
    below = sorted((p for p in path.rglob("*") if p.is_dir()),
                   key=lambda p: len(p.parts), reverse=True)
    for directory in [*below, path]:
        for attempt in range(50):
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                # EBUSY for a moment after the last member exited: wait briefly rather
                # than leave the cgroup behind.
                if attempt == 49:
                    raise
                time.sleep(0.05)


@undoer("cgroup")
def _undo_cgroup(data: Mapping[str, Any]) -> None:
    # Only our workloads ever joined this cgroup; anything still inside is ours.
    remove(Path(data["path"]))
