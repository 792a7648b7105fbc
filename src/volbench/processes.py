"""Ending processes volbench started, by PID, and only those.

A journaled process is identified by its PID *and* its start time, so a PID
that the kernel has since reused for someone else's process is never touched.
Each child leads its own process group (proc.py), so the group id equals the
journaled PID; members of that group that started no earlier than the leader
are ours too (fio's job processes, a server's workers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volbench.journal import undoer
from volbench.procfs import end_group


@undoer("process")
def _undo_process(data: Mapping[str, Any]) -> None:
    end_group(int(data["pid"]), data.get("start"))
