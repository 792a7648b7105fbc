"""How a power cut ends a server and starts it again (faults/powerstack.py uses them).

A module of its own with no volbench imports, so services.postgres (imported by the
pgbench workload's spec) and workloads.base can both name it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CrashHooks:
    """A server under a power cut: `crash` ends every process of it at once (SIGKILL, as
    the power would); `start` starts it again on what the disks kept, waits until it
    answers a query, and returns what it did (raises ResourceError when it cannot)."""

    crash: Callable[[], None]
    start: Callable[[], dict[str, Any]]
