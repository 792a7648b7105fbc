"""Ending processes volbench started, by PID, and only those.

A journaled process is identified by its PID *and* its start time, so a PID
that the kernel has since reused for someone else's process is never touched.
Each child leads its own process group (proc.py), so the group id equals the
journaled PID; members of that group that started no earlier than the leader
are ours too (fio's job processes, a server's workers).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def our_group_members(pgid: int, leader_start: int | None) -> list[int]:
    """PIDs in process group `pgid` that started at or after the recorded leader start."""
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[2] is pgrp, fields[19] starttime (see proc(5), offset by pid and comm)
        if fields is None or int(fields[2]) != pgid:
            continue
        if leader_start is not None and int(fields[19]) < leader_start:
            continue
        members.append(int(entry.name))
    return members


def end_group(pgid: int, leader_start: int | None, grace: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL, the processes of a group we started. Returns the PIDs signalled."""
    members = our_group_members(pgid, leader_start)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 2.0)
        while time.monotonic() < deadline and our_group_members(pgid, leader_start):
            time.sleep(0.05)
        if not our_group_members(pgid, leader_start):
            break
    return members
