"""Every process a run starts lives in the run's cgroup, and ends with it.

Process groups and the parent-death signal cannot hold processes that call setsid():
fio's job workers do (a SIGKILLed volbench once left one waiting forever), so do
PostgreSQL's backends and the daemons of the storage stacks. cgroup membership is
inherited across fork and setsid, and a process cannot leave a cgroup unless root
moves it, so a run creates one cgroup, journals it before it exists (kind
`run-cgroup`), and every child joins it before it execs (proc.py). Teardown and
`volbench cleanup` then read the cgroup's member list until it is empty, signalling
each member by PID — only PIDs found in our cgroup, checked again through a pidfd.

Where: the cgroup v1 blkio hierarchy, the one cgroup hierarchy volbench already needs
(disk-class throttling) and the one the lab guest mounts. A process is in exactly one
cgroup per hierarchy, so a throttled target's cgroup is created *inside* the run's
(`volbench-PID-runN/volbench-PID-TARGET`): its processes are in the run's subtree and
ended with it. Throttling is unchanged by the nesting: on cgroup v1 blk-throttle is
flat — a group's limits apply to its own processes whatever its parent is, and the
run's cgroup has no limits of its own.

Without the blkio hierarchy or root (a directory target run as a user), there is no
cgroup to contain in: volbench falls back to process groups and per-command tags
(proc.end_tagged), which end setsid'd descendants when their command ends but not
when volbench is SIGKILLed; `containment_missing` says why.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.system import proc
from volbench.system.block import cgroups
from volbench.system.journal import Scope, first_in_cleanup, undoer

_runs = itertools.count(1)
# The storage stacks' daemons (daemons.py) live in this cgroup below the run's: `volbench
# cleanup` ends the run's other processes first (they keep mounts busy) but needs the
# daemons until the resources they serve are undone (iscsiadm needs iscsid).
DAEMONS = "daemons"


def containment_missing() -> str | None:
    """None when runs can be contained here, else why not."""
    return cgroups.available()


def begin(scope: Scope) -> Path | None:
    """Create the run's cgroup (journaled first) and make every child start in it.

    Undone by the scope: every process still in the cgroup is ended, the cgroup removed
    and containment stopped. Returns the cgroup, or None where runs cannot be contained."""
    if containment_missing() is not None:
        return None
    while True:
        path = cgroups.BLKIO / f"volbench-{os.getpid()}-run{next(_runs)}"
        if not path.exists():
            break
    scope.add("run-cgroup", path=str(path))
    path.mkdir()
    (path / DAEMONS).mkdir()
    proc.set_containment(path, cgroups.HIERARCHY, cgroups.relative(path))
    return path


def daemon_cgroup() -> Path | None:
    """Where a storage-stack daemon starts during a contained run."""
    run = proc.containment()
    return run / DAEMONS if run is not None else None


@first_in_cleanup("run-cgroup")
def _end_run_processes(data: Mapping[str, Any]) -> None:
    path = Path(data["path"])
    if path.exists():
        cgroups.end_members(path, keep=path / DAEMONS)


@undoer("run-cgroup")
def _undo_run_cgroup(data: Mapping[str, Any]) -> None:
    path = Path(data["path"])
    if proc.containment() == path:
        proc.set_containment(None)
    cgroups.remove(path)
