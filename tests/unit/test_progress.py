"""Progress (cli/progress.py): time left from the plan corrected by the runs so far, a
range under adaptive repetition, faulted runs' phases, one live line on a terminal,
plain lines in a log, nothing with --quiet, and the lab guest's events drawn on the host.
A real terminal at 80 and 100 columns: tests/system/test_progress_tmux.py."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from volbench.cli.progress import Clock, EventProgress, TerminalProgress, clock, headline
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.engine.plan import PlannedRun
from volbench.lab.events import follow


class FakeTime:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Screen(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _run(target: str, rep: int) -> PlannedRun:
    return PlannedRun(target, "rand4k", {"rw": "randread", "bs": "4k"}, rep)


def _result(run: PlannedRun, *metrics: Metric) -> RunResult:
    return RunResult(run.target, run.workload, run.params, run.repetition, Status.OK, 0.0,
                     1.0, parsed=Parsed(tuple(metrics)))


def _progress(tty: bool, quiet: bool = False) -> tuple[TerminalProgress, Screen, FakeTime]:
    screen, now = Screen(tty), FakeTime()
    return TerminalProgress(screen, quiet=quiet, now=now, tick=0), screen, now


def test_time_left_is_the_plan_corrected_by_what_the_runs_took() -> None:
    progress, screen, now = _progress(tty=False)
    runs = [_run(t, rep) for rep in (1, 2) for t in ("a", "b")]
    progress.begin(len(runs), 40.0, lambda run: 10.0)
    assert "4 runs planned, about 40 s" in screen.getvalue()
    progress.run_started(runs[0])
    assert progress.clock.left() == (40.0, 40.0)  # nothing measured yet: the plan
    now.t += 4
    assert progress.clock.left() == (36.0, 36.0)
    now.t += 16  # the first run took twice its plan (build and layout included)
    progress.run_finished(runs[0], _result(runs[0], Metric("iops", 500.0, "op/s", {"op": "read"})))
    assert progress.clock.left() == (60.0, 60.0)  # three more runs of 10 s, at 2x
    assert screen.getvalue().splitlines()[-1] == (
        "1/4 a rand4k rw=randread bs=4k rep 1: read 500 op/s  [20 s elapsed, 1:00 left]")
    progress.run_started(runs[1])
    now.t += 5  # a quarter of its corrected 20 s
    assert progress.clock.left() == (55.0, 55.0)


def test_adaptive_repetition_gives_a_range_until_the_rounds_stop() -> None:
    progress, screen, now = _progress(tty=False)
    progress.begin(2, 20.0, lambda run: 10.0, upto_s=40.0)
    assert "up to 1:00" in screen.getvalue()
    assert progress.clock.left() == (20.0, 60.0)
    for rep in (1,):
        for t in ("a", "b"):
            progress.run_started(_run(t, rep))
            now.t += 10
            progress.finished(_run(t, rep), "read 500 op/s")
    assert "0 s–40 s left" in screen.getvalue().splitlines()[-1]
    progress.more(2, 20.0, upto_s=20.0)  # round 2 for both; one more round may follow
    assert progress.clock.left() == (20.0, 40.0)
    progress.more(0, upto_s=0.0)  # decided
    assert progress.clock.left() == (20.0, 20.0)


def test_a_faulted_run_names_its_phases() -> None:
    run = _run("md", 1)
    result = _result(run, Metric("iops", 358.2, "op/s", {"op": "read"}),
                     *(Metric("iops", v, "op/s", {"op": "read", "phase": p})
                       for p, v in (("before", 500.0), ("slow", 100.0), ("after", 500.0))),
                     Metric("bw", 1.4e6, "B/s", {"op": "read"}))
    assert headline(result) == "read 358.2 op/s (before 500, under slow 100, after 500 op/s)"


def test_a_tool_s_own_headline_is_shown() -> None:
    seq = PlannedRun("a", "seq", {"rw": "read"}, 1)
    result = _result(seq, Metric("iops", 50.0, "op/s", {"op": "read"}),
                     Metric("bw", 52428800.0, "B/s", {"op": "read"}))
    assert headline(result) == "read 50 MiB/s"  # sequential: bandwidth, not IOPS


def test_quiet_shows_nothing() -> None:
    progress, screen, _now = _progress(tty=True, quiet=True)
    progress.begin(1, 10.0, lambda run: 10.0)
    progress.run_started(_run("a", 1))
    progress.finished(_run("a", 1), "read 500 op/s")
    progress.note("something")  # notes stay: they are not progress
    progress.end()
    assert "runs planned" not in screen.getvalue() and "1/1" not in screen.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_the_live_line_fits_the_terminal(width: int) -> None:
    progress, _screen, now = _progress(tty=True)
    progress.begin(120, 3600.0, lambda run: 30.0)
    run = PlannedRun("a-very-long-target-name-for-a-striped-lvm", "a-long-workload-name",
                     {"rw": "randrw", "bs": "128k", "iodepth": 32, "size": "16G"}, 12)
    progress.run_started(run)
    now.t += 75
    line = progress.status(width)
    assert len(line) < width and line.startswith("[") and line.endswith("left")
    assert "0/120" in line and "1:15 elapsed" in line and "…" in line


def test_on_a_terminal_the_live_line_is_redrawn_in_place() -> None:
    progress, screen, now = _progress(tty=True)
    progress.begin(2, 20.0, lambda run: 10.0)
    progress.run_started(_run("a", 1))
    now.t += 10
    progress.finished(_run("a", 1), "read 500 op/s")
    progress.run_started(_run("b", 1))
    progress.end()
    text = screen.getvalue()
    # each draw returns to the line's start and clears it; finished runs get lines above
    assert text.count("\r\033[K") >= 4 and "1/2 a rand4k rw=randread bs=4k rep 1: read 500 op/s\n" \
        in text.replace("\r\033[K", "")
    assert text.endswith("\r\033[K")  # the live line is gone at the end


def test_console_text_of_the_lab_goes_above_the_live_line() -> None:
    progress, screen, _now = _progress(tty=True)
    progress.begin(1, 10.0, lambda run: 10.0)
    progress.run_started(_run("a", 1))
    progress.write("kernel: some message\n")
    progress.write("partial")  # no newline yet: the live line waits, not drawn over it
    before = screen.getvalue()
    progress._draw()
    assert screen.getvalue() == before
    progress.finished(_run("a", 1), "ok")
    assert "partial\n1/1 a" in screen.getvalue()


def test_the_guest_s_events_draw_the_same_lines_on_the_host(tmp_path: Path) -> None:
    events = tmp_path / "progress"
    guest = EventProgress(events)
    runs = [_run("a", 1), _run("b", 1)]
    guest.begin(2, 20.0, lambda run: 10.0, upto_s=0.0)
    for run in runs:
        guest.run_started(run)
        guest.run_finished(run, _result(run, Metric("iops", 500.0, "op/s", {"op": "read"})))
    guest.note("every comparison decided")
    guest.end()
    host, screen, _now = _progress(tty=False)
    stop = threading.Event()
    stop.set()
    follow(events, host.event, stop)
    lines = screen.getvalue().splitlines()
    assert lines[0] == "2 runs planned, about 20 s"
    assert lines[1].startswith("1/2 a rand4k rw=randread bs=4k rep 1: read 500 op/s  [")
    assert lines[2].startswith("2/2 b rand4k") and lines[3] == "note: every comparison decided"


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "events"
    path.write_text('{"event": "note", "text": "one"}\n{"event": "no')
    seen: list[dict[str, object]] = []
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(path, seen.append, stop, 0.01))
    thread.start()
    time.sleep(0.1)
    with open(path, "a") as f:
        f.write('te", "text": "two"}\n')
    time.sleep(0.1)
    stop.set()
    thread.join(timeout=5)
    assert [e["text"] for e in seen] == ["one", "two"]


def test_clock_words() -> None:
    assert [clock(s) for s in (0.4, 42, 252, 3723)] == ["0 s", "42 s", "4:12", "1:02:03"]
    c = Clock(FakeTime())
    assert c.left() == (0.0, 0.0)
