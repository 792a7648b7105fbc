"""The exact commands a target ran to build itself, recorded as it runs them.

A recipe is what a reader needs to rebuild the layout by hand, so it is stored
with the results and shown in reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from volbench.system import proc


class Recipe:
    def __init__(self, tracker: proc.ProcessTracker | None = None) -> None:
        self.steps: list[str] = []
        self.tracker = tracker

    def run(self, argv: Sequence[str], *, timeout: float, **kwargs: Any) -> proc.Completed:
        line = proc.command_line(argv)
        if kwargs.get("user"):
            line = f"runuser -u {kwargs['user']} -- {line}"
        self.steps.append(line)
        return proc.run(argv, timeout=timeout, tracker=self.tracker, **kwargs)

    def write(self, path: Path, text: str) -> None:
        """Kernel knobs are files: write directly (shown as the shell equivalent)."""
        self.steps.append(f"echo {text} > {path}")
        path.write_text(text)

    def note(self, text: str) -> None:
        self.steps.append(f"# {text}")
