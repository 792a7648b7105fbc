"""Progress on the terminal: a bar with ETA when stderr is a terminal, a line per run otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from volbench.core.model import RunResult
from volbench.core.units import format_duration, format_value
from volbench.engine.plan import PlannedRun

HEADLINE = {"iops": "op/s", "tps": "tx/s", "bw": "B/s"}


def _headline(result: RunResult) -> str:
    for name in HEADLINE:
        values = [m for m in result.metrics if m.name == name and "job" not in m.tags
                  and m.tags.get("host", "all") == "all"]
        if values:
            return " ".join(f"{m.tags.get('op', '')} {format_value(m.value, m.unit)}".strip()
                            for m in values)
    return ""


class TerminalProgress:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.total = 0
        self.done = 0
        self.estimate = 0.0
        self.start = time.monotonic()

    def _eta(self) -> str:
        elapsed = time.monotonic() - self.start
        if self.done:
            left = elapsed / self.done * (self.total - self.done)
        else:
            left = max(0.0, self.estimate - elapsed)
        return format_duration(left)

    def begin(self, total: int, estimate_s: float) -> None:
        self.total, self.estimate, self.start = total, estimate_s, time.monotonic()
        if not self.quiet:
            self.stream.write(f"{total} runs planned, about {format_duration(estimate_s)}\n")

    def more(self, runs: int) -> None:
        self.total += runs

    def run_started(self, run: PlannedRun) -> None:
        if self.quiet or not self.tty:
            return
        width = 24
        filled = int(width * self.done / max(1, self.total))
        label = f"{run.target} {run.workload}" + (" (warm-up)" if run.warmup else "")
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                          f" {label[:40]:<40} ETA {self._eta():<12}")
        self.stream.flush()

    def run_finished(self, run: PlannedRun, result: RunResult) -> None:
        self.done += 1
        if self.quiet:
            return
        status = "" if result.status == "ok" else f" {str(result.status).upper()}: {result.error}"
        params = " ".join(f"{k}={v}" for k, v in run.params.items()
                          if k in ("rw", "bs", "iodepth", "size", "scale", "clients"))
        line = (f"{self.done}/{self.total} {run.target} {run.workload} {params} "
                f"rep {run.repetition}{' warm-up' if run.warmup else ''}: "
                f"{_headline(result)}{status}")
        prefix = "\r\033[K" if self.tty else ""
        self.stream.write(prefix + line + "\n")

    def note(self, text: str) -> None:
        prefix = "\r\033[K" if self.tty else ""
        self.stream.write(f"{prefix}note: {text}\n")

    def end(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\r\033[K")
        self.stream.flush()
