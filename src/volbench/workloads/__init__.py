"""Workloads: one module per tool. Each builds argv and parses output; none runs anything."""

from __future__ import annotations

from volbench.workloads import bonnie, dd, fio, hdparm, macro, pgbench
from volbench.workloads.base import Invocation, WorkloadKind, WorkloadSpec

KINDS: dict[str, WorkloadKind] = {k.name: k for k in (
    fio.KIND, pgbench.KIND, bonnie.KIND, hdparm.KIND, dd.KIND, macro.SMALLFILES, macro.COMMAND,
)}

__all__ = ["KINDS", "Invocation", "WorkloadKind", "WorkloadSpec"]
