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


def key_lines(output: str) -> list[str]:
    """The lines of a tool's error output worth showing: tools put the reason first
    (mkfs then prints its whole usage) or last (a stack of context lines), so keep both ends."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines if len(lines) <= 3 else [lines[0], lines[1], "…", lines[-1]]


class CommandFailed(VolbenchError):
    """A process exited non-zero (the exit code decides, never stderr)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, hint: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = " | ".join(key_lines(stderr))
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


class Interrupted(BaseException):
    """SIGTERM/SIGINT arrived; raised so every context manager tears down.

    A BaseException, like KeyboardInterrupt, so that handlers recording a failed
    run (`except VolbenchError`) never swallow it and carry on.
    """

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(f"interrupted by {signal_name}; finished runs are saved: run the "
                         "same command again with --resume to continue")

    def left_behind(self, what: list[str]) -> None:
        """Say in the message that teardown could not remove `what`."""
        self.args = (f"{self.args[0]}; teardown could not remove " + "; ".join(what)
                     + ": run `volbench cleanup` first",)


class UnsafeDevice(VolbenchError):
    """The device guard refused a disk; names the rule."""

    def __init__(self, device: str, rule: str, fix: str) -> None:
        self.device = device
        self.rule = rule
        super().__init__(f"refusing to touch {device}: {rule}; {fix}")


class ResourceError(VolbenchError):
    """A resource (loop device, mount, cgroup, space) could not be provided."""


class ParseError(VolbenchError):
    """Tool output that does not have the expected format.

    `partial` may carry what could still be read (a model.Parsed), which the runner
    keeps with the failed run.
    """

    partial: object = None

    def __init__(self, tool: str, source: str, detail: str) -> None:
        self.tool = tool
        self.source = source
        self.detail = detail
        super().__init__(f"cannot read {tool} output from {source}: {detail}")


class StoreError(VolbenchError):
    """The results database is missing, newer than this volbench, or inconsistent."""
