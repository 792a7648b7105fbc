"""Workloads: one module per tool. Each builds argv and parses output; none runs anything.

`KINDS` imports a tool's module the first time the tool is looked up (core/registry.py):
a command imports only the tools its experiment uses.
"""

from __future__ import annotations

from volbench.core.registry import LazyKinds
from volbench.workloads.base import Invocation, WorkloadKind, WorkloadSpec

KINDS: LazyKinds[WorkloadKind] = LazyKinds({
    "fio": "volbench.workloads.fio:KIND",
    "pgbench": "volbench.workloads.pgbench:KIND",
    "bonnie++": "volbench.workloads.bonnie:KIND",
    "hdparm": "volbench.workloads.hdparm:KIND",
    "dd": "volbench.workloads.dd:KIND",
    "smallfiles": "volbench.workloads.macro:SMALLFILES",
    "command": "volbench.workloads.macro:COMMAND",
})

__all__ = ["KINDS", "Invocation", "WorkloadKind", "WorkloadSpec"]
