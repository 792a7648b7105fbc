"""Typed errors. Every message says what went wrong *and* how to fix it.

Library code raises these; only the CLI turns them into an exit status.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class VolbenchError(Exception):
    """Base class: `str(err)` is one line a user can act on."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an experiment file: where, what, and the fix."""

    path: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        return f"{text} ({self.fix})" if self.fix else text


class ExperimentError(VolbenchError):
    """An experiment file (or option) is invalid; carries one Problem per mistake."""

    def __init__(self, problems: Sequence[Problem], source: str = "experiment") -> None:
        self.problems = list(problems)
        self.source = source
        lines = [f"{source}: {len(self.problems)} problem(s)"]
        lines += [f"  {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class ToolMissing(VolbenchError):
    def __init__(self, tool: str, package: str | None, disables: str = "") -> None:
        self.tool = tool
        self.package = package
        how = f"install it with: apt-get install {package}" if package else "install it"
        what = f" (needed for {disables})" if disables else ""
        super().__init__(f"{tool} not found{what}; {how}")


class CommandFailed(VolbenchError):
    """A process exited non-zero (the exit code decides, never stderr)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, hint: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        msg = f"command failed with exit code {returncode}: {' '.join(argv)}"
        if tail:
            msg += f": {tail}"
        if hint:
            msg += f"; {hint}"
        super().__init__(msg)


class CommandTimeout(CommandFailed):
    def __init__(self, argv: Sequence[str], timeout: float, stderr: str) -> None:
        super().__init__(argv, -9, stderr)
        self.timeout = timeout
        self.args = (f"command timed out after {timeout:g} s and was killed: {' '.join(argv)}; "
                     "raise the timeout if the workload needs longer",)


class Interrupted(VolbenchError):
    """SIGTERM/SIGINT arrived; raised so every context manager tears down."""

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(f"interrupted by {signal_name}; finished runs are saved, "
                         "continue with: volbench run FILE --resume")


class UnsafeDevice(VolbenchError):
    """The device guard refused a disk; names the rule."""

    def __init__(self, device: str, rule: str, fix: str) -> None:
        self.device = device
        self.rule = rule
        super().__init__(f"refusing to touch {device}: {rule}; {fix}")


class ResourceError(VolbenchError):
    """A resource (loop device, mount, cgroup, space) could not be provided."""


class ParseError(VolbenchError):
    """Tool output that does not have the expected format."""

    def __init__(self, tool: str, source: str, detail: str) -> None:
        self.tool = tool
        self.source = source
        super().__init__(f"cannot read {tool} output from {source}: {detail}")


class StoreError(VolbenchError):
    """The results database is missing, newer than this volbench, or inconsistent."""
