"""Disk classes on one machine: cgroup v1 blkio throttling of a target's devices.

The workload's processes (and a database server's) join the cgroup before they
exec (proc.py), so their I/O to the listed devices is capped. Buffered
writeback done later by kernel flusher threads is *not* throttled in cgroup v1
(MACHINE-NOTES); targets therefore record how the cap was enforced so a report
can say so.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.devices import device_number
from volbench.errors import ResourceError
from volbench.journal import Scope, undoer
from volbench.limits import Limits
from volbench.recipe import Recipe

BLKIO = Path("/sys/fs/cgroup/blkio")


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
    path = BLKIO / f"volbench-{os.getpid()}-{_safe(name)}"
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


@undoer("cgroup")
def _undo_cgroup(data: Mapping[str, Any]) -> None:
    path = Path(data["path"])
    if not path.exists():
        return
    # Only our workloads ever joined this cgroup; anything still inside is ours.
    for attempt in range(50):
        pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM if attempt < 20 else signal.SIGKILL)
        time.sleep(0.1)
    path.rmdir()
