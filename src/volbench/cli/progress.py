"""Progress: where an experiment is and how long it has left.

On a terminal, one live line at the bottom, redrawn in place every second (runs done and
total, the current run, elapsed, time left), with each finished run's result printed
above it. Without a terminal (CI, a pipe, a log file), one plain line per finished run,
with the time left. `--quiet` shows nothing. In the lab VM (`volbench lab run`) the
guest writes its progress as JSON lines to a file the host reads (EventProgress, lab/labrun.py),
and the host draws them on its own terminal.

Time left: each run's planned seconds (the tool's estimate, engine/plan.py) times what the
runs so far took against their plan (builds, layouts and volbench's own time included),
so a plan that guessed low is corrected as soon as the first run ends. Under adaptive
repetition the upper end adds every round up to repeat.max for the cases not yet decided:
the time left is a range until the rounds stop.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from volbench.core.headline import headline as is_headline
from volbench.core.model import Metric, RunResult
from volbench.core.units import format_value
from volbench.engine.plan import PlannedRun
from volbench.system.host.hostinfo import PROGRESS_EVENTS

# A run without its workload's headline metric (bonnie++) shows these, if it has them.
FALLBACK = ("iops", "tps", "bw")
PARAMS = ("rw", "bs", "iodepth", "size", "scale", "clients", "op", "load")
TICK_S = 1.0


def clock(seconds: float) -> str:
    """42 s, 4:12, 1:02:03: short enough for a live line."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _phase_words(phases: list[tuple[str, Metric]]) -> str:
    """`before 500, under slow 100, after 500 op/s`: a faulted run's phases in order, the
    unit once at the end."""
    words = []
    for i, (phase, m) in enumerate(phases):
        name = phase if phase in ("before", "after", "restore") else f"under {phase}"
        text = format_value(m.value, m.unit)
        if i < len(phases) - 1 and text.endswith(" " + m.unit):
            text = text[: -len(m.unit) - 1]
        words.append(f"{name} {text}")
    return ", ".join(words)


def headline(result: RunResult) -> str:
    """The run's headline figures (core/headline.py: IOPS for random I/O, bandwidth for
    sequential, tps, a job's times), per operation; a faulted run's phases beside each."""
    shown = [m for m in result.metrics if "job" not in m.tags and "phase" not in m.tags
             and m.tags.get("host", "all") == "all"]
    found = [m for m in shown if is_headline(m.name, m.tags, result.params)] or \
        [m for m in shown if m.name in FALLBACK][:2]
    parts = []
    for m in found:
        op = m.tags.get("op", "")
        text = f"{op or m.name} {format_value(m.value, m.unit)}"
        phases = [(p.tags["phase"], p) for p in result.metrics if p.name == m.name
                  and "phase" in p.tags and p.tags.get("op", "") == op
                  and p.tags["phase"] != "total"]
        parts.append(text + (f" ({_phase_words(phases)})" if phases else ""))
    return "; ".join(parts)


def label(run: PlannedRun) -> str:
    params = " ".join(f"{k}={v}" for k, v in run.params.items() if k in PARAMS)
    return " ".join(p for p in (run.target, run.workload, params,
                                f"rep {run.repetition}" + (" warm-up" if run.warmup else ""))
                    if p)


class Clock:
    """Time left from the plan's per-run seconds, corrected by how long the runs so far
    took against their plan."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.start = now()
        self.planned = 0.0  # seconds the plan gives the runs not yet finished
        self.done_planned = 0.0  # ... gave the runs finished so far
        self.more = 0.0  # planned seconds of the rounds adaptive repetition may still add
        self.current: tuple[float, float] | None = None  # (its plan, when it started)

    def elapsed(self) -> float:
        return self.now() - self.start

    def left(self) -> tuple[float, float]:
        """(at least, at most) seconds left; equal unless adaptive rounds may come."""
        now = self.now()
        running = 0.0 if self.current is None else now - self.current[1]
        if self.done_planned <= 0:  # nothing finished yet: the plan as it is
            rate = 1.0
        else:
            rate = max(0.0, now - self.start - running) / self.done_planned
        ahead = self.planned
        if self.current is not None:
            ahead -= self.current[0]
            ahead += max(0.0, self.current[0] - running / rate) if rate > 0 else 0.0
        low = max(0.0, ahead * rate)
        return low, low + self.more * rate


class TerminalProgress:
    """The runner's Progress on a terminal or in a log (module doc)."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False,
                 now: Callable[[], float] = time.monotonic, tick: float = TICK_S) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.clock = Clock(now)
        self.total = 0
        self.done = 0
        self.per_run: Callable[[PlannedRun], float] = lambda run: 0.0
        self.running: PlannedRun | None = None
        self._lock = threading.RLock()
        self._tick = tick
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._live = False  # a live line is on the screen
        self._midline = False  # text of others ends without a newline: do not draw over it

    # -- the runner's calls --------------------------------------------------------------
    def begin(self, total: int, estimate_s: float,
              per_run: Callable[[PlannedRun], float] | None = None,
              upto_s: float = 0.0) -> None:
        with self._lock:
            self.total, self.clock = total, Clock(self.clock.now)
            self.per_run = per_run or (lambda run: estimate_s / max(1, total))
            self.clock.planned, self.clock.more = estimate_s, upto_s
            if self.quiet:
                return
            more = f" (up to {clock(estimate_s + upto_s)} if adaptive rounds run to " \
                "repeat.max)" if upto_s else ""
            self._line(f"{total} runs planned, about {clock(estimate_s)}{more}")
            if self.tty and self._ticker is None and self._tick > 0:
                self._ticker = threading.Thread(target=self._ticking, name="progress",
                                                daemon=True)
                self._ticker.start()

    def more(self, runs: int, estimate_s: float = 0.0, upto_s: float | None = None) -> None:
        """Adaptive repetition added `runs` (planned `estimate_s`); `upto_s`: what the
        rounds after these may still add (0 once every comparison is decided)."""
        with self._lock:
            self.total += runs
            self.clock.planned += estimate_s
            if upto_s is not None:
                self.clock.more = upto_s
            self._draw()

    def run_started(self, run: PlannedRun) -> None:
        with self._lock:
            self.running = run
            self.clock.current = (self.per_run(run), self.clock.now())
            self._draw()

    def run_finished(self, run: PlannedRun, result: RunResult) -> None:
        status = "" if result.status == "ok" else f" {str(result.status).upper()}: {result.error}"
        self.finished(run, f"{headline(result)}{status}")

    def finished(self, run: PlannedRun, text: str) -> None:
        """A run ended with `text` (its headline, or its status and error)."""
        with self._lock:
            planned = self.per_run(run)
            self.done += 1
            self.clock.planned -= planned
            self.clock.done_planned += planned
            self.clock.current, self.running = None, None
            if self.quiet:
                return
            line = f"{self.done}/{self.total} {label(run)}: {text}"
            if not self.tty:
                line += f"  [{self._left_words()}]"
            self._line(line)

    def note(self, text: str) -> None:
        self.write(f"note: {text}\n")

    def end(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            self._ticker = None
        with self._lock:
            self._clear()
            self.stream.flush()

    # -- text from elsewhere (the lab's console) -----------------------------------------
    def write(self, text: str) -> None:
        """Text that goes above the live line (console output, notes)."""
        with self._lock:
            self._clear()
            self.stream.write(text)
            self._midline = bool(text) and not text.endswith("\n")
            self._draw()
            self.stream.flush()

    # -- drawing ---------------------------------------------------------------------------
    def _left_words(self) -> str:
        low, high = self.clock.left()
        left = clock(low) if high - low < 1 else f"{clock(low)}–{clock(high)}"
        return f"{clock(self.clock.elapsed())} elapsed, {left} left"

    def _width(self) -> int:
        try:
            return max(20, os.get_terminal_size(self.stream.fileno()).columns)
        except (OSError, ValueError, AttributeError):
            return 80

    def status(self, width: int) -> str:
        """The live line, at most `width` columns: counts, time, then the current run."""
        head = f"{self.done}/{self.total}"
        time_part = self._left_words()
        current = label(self.running) if self.running else ""
        room = width - 1 - len(head) - len(time_part) - 6
        bar = ""
        if room >= 30:
            filled = int(12 * self.done / max(1, self.total))
            bar = f"[{'#' * filled}{'.' * (12 - filled)}] "
            room -= len(bar)
        if len(current) > room:
            current = current[: max(0, room - 1)] + "…" if room > 1 else ""
        line = f"{bar}{head}  {current}  {time_part}" if current else f"{bar}{head}  {time_part}"
        return line[: width - 1]

    def _draw(self) -> None:
        if self.quiet or not self.tty or self._midline:
            return
        self.stream.write("\r\033[K" + self.status(self._width()))
        self.stream.flush()
        self._live = True

    def _clear(self) -> None:
        if self._live:
            self.stream.write("\r\033[K")
            self._live = False

    def _line(self, text: str) -> None:
        with self._lock:
            self._clear()
            if self._midline:  # others' text stopped mid-line: ours starts on a new one
                self.stream.write("\n")
                self._midline = False
            self.stream.write(text + "\n")
            self._draw()
            self.stream.flush()

    def _ticking(self) -> None:
        while not self._stop.wait(self._tick):
            with self._lock:
                if self.running is not None:
                    self._draw()

    # -- the lab: the guest's events drawn here --------------------------------------------
    def event(self, data: Mapping[str, Any]) -> None:
        """One event an EventProgress wrote (the lab's guest): drawn as if it were ours."""
        kind = data.get("event")
        if kind == "begin":
            estimates: dict[str, float] = {}
            self.begin(int(data["total"]), float(data["estimate"]),
                       lambda run: estimates.get(_key(run), 0.0), float(data.get("upto", 0)))
            self._estimates = estimates
        elif kind == "more":
            self.more(int(data["runs"]), float(data.get("estimate", 0)),
                      None if data.get("upto") is None else float(data["upto"]))
        elif kind == "start":
            run = _run(data["run"])
            getattr(self, "_estimates", {})[_key(run)] = float(data.get("planned", 0))
            self.run_started(run)
        elif kind == "finish":
            self.finished(_run(data["run"]), str(data.get("text", "")))
        elif kind == "note":
            self.note(str(data.get("text", "")))
        elif kind == "end":
            self.end()


def _key(run: PlannedRun) -> str:
    return json.dumps([run.run_key, run.target], sort_keys=True)


def _run(data: Mapping[str, Any]) -> PlannedRun:
    return PlannedRun(str(data["target"]), str(data["workload"]), dict(data["params"]),
                      int(data["repetition"]), bool(data.get("warmup", False)))


class EventProgress:
    """The runner's Progress as JSON lines appended to `path`: the lab's guest writes them,
    the host reads and draws them (TerminalProgress.event)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.per_run: Callable[[PlannedRun], float] = lambda run: 0.0

    def _write(self, **data: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(data, default=str) + "\n")

    @staticmethod
    def _run(run: PlannedRun) -> dict[str, Any]:
        return {"target": run.target, "workload": run.workload, "params": dict(run.params),
                "repetition": run.repetition, "warmup": run.warmup}

    def begin(self, total: int, estimate_s: float,
              per_run: Callable[[PlannedRun], float] | None = None,
              upto_s: float = 0.0) -> None:
        self.per_run = per_run or (lambda run: estimate_s / max(1, total))
        self._write(event="begin", total=total, estimate=estimate_s, upto=upto_s)

    def more(self, runs: int, estimate_s: float = 0.0, upto_s: float | None = None) -> None:
        self._write(event="more", runs=runs, estimate=estimate_s, upto=upto_s)

    def run_started(self, run: PlannedRun) -> None:
        self._write(event="start", run=self._run(run), planned=self.per_run(run))

    def run_finished(self, run: PlannedRun, result: RunResult) -> None:
        status = "" if result.status == "ok" else f" {str(result.status).upper()}: {result.error}"
        self._write(event="finish", run=self._run(run), text=f"{headline(result)}{status}")

    def note(self, text: str) -> None:
        self._write(event="note", text=text)

    def end(self) -> None:
        self._write(event="end")


def progress_for(quiet: bool) -> TerminalProgress | EventProgress:
    """The terminal's progress, or in the lab's guest the events for the host."""
    events = os.environ.get(PROGRESS_EVENTS)
    if events:
        return EventProgress(Path(events))
    return TerminalProgress(quiet=quiet)
