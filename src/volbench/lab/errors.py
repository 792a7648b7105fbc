"""Errors of the lab VM: each says what happened and, from the console, why."""

from __future__ import annotations

from volbench.core.errors import ResourceError


class LabError(ResourceError):
    """The lab VM could not be prepared or did not finish its command."""


class KernelUnavailable(LabError):
    """The lab kernel is neither cached nor downloadable."""


class LabBootError(LabError):
    """The VM stopped, or was stopped, before the guest ran the command."""


class LabTimeout(LabError):
    """The command ran longer than the lab's timeout; the VM was stopped."""


def console_tail(console: str, lines: int = 25) -> str:
    """The last lines of the VM console, indented for an error message."""
    text = console.replace("\r\n", "\n").replace("\r", "\n")
    tail = [line for line in text.splitlines() if line.strip()][-lines:]
    if not tail:
        return "\n  (the console stayed empty)"
    return "\n  console, last lines:\n" + "\n".join(f"    {line}" for line in tail)
