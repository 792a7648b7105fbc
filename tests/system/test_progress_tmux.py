"""Progress on a real terminal (tmux) at 80 and 100 columns, and in a pipe: a real
experiment (two directory targets, a command workload that sleeps) runs for a few seconds.

On the terminal the bottom line is the live line (runs done, the current run, elapsed,
time left), redrawn in place and never wider than the terminal; each finished run's line
stays above it; at the end no live line is left. In a pipe every finished run gets a
plain line with the time left; with --quiet there is none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import need

EXPERIMENT = """name: progress
workdir: {work}
targets:
  - {{name: here, type: directory, path: {a}}}
  - {{name: there, type: directory, path: {b}}}
workloads:
  - {{name: nap, tool: command, command: "sleep 1.5", estimate: 1s}}
repeat: 3
"""
LIVE = re.compile(r"^(\[[#.]{12}\] )?\d/6  .*\d+ s elapsed, \d+ s left$")
FINISHED = re.compile(r"^\d/6 (here|there) nap rep \d: real 1\.\d+ s; other 1\.\d+ s")


def _experiment(tmp_path: Path) -> Path:
    for name in ("a", "b", "work"):
        (tmp_path / name).mkdir()
    path = tmp_path / "e.yaml"
    path.write_text(EXPERIMENT.format(work=tmp_path / "work", a=tmp_path / "a",
                                      b=tmp_path / "b"))
    return path


def _volbench() -> str:
    return str(Path(sys.executable).with_name("volbench"))


@pytest.mark.parametrize("width", [80, 100])
def test_a_live_line_on_a_terminal(tmp_path: Path, width: int) -> None:
    need(shutil.which("tmux") is not None, "tmux is not installed (apt-get install tmux)")
    file, done = _experiment(tmp_path), tmp_path / "done"
    session = f"volbench-progress-{os.getpid()}-{width}"
    tmux = ["tmux", "-L", session, "-f", "/dev/null"]
    command = f"{_volbench()} run {file} --db {tmp_path / 'p.db'}; touch {done}; sleep 60"
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", str(width), "-y", "50",
                    "env", "TERM=xterm", "sh", "-c", command], check=True, timeout=30)
    live, panes = [], []
    try:
        deadline = time.monotonic() + 120
        while not done.exists() and time.monotonic() < deadline:
            pane = subprocess.run([*tmux, "capture-pane", "-p", "-t", session], check=True,
                                  capture_output=True, text=True, timeout=30).stdout
            lines = [line.rstrip() for line in pane.splitlines() if line.strip()]
            if lines and LIVE.match(lines[-1]):
                live.append(lines[-1])
            panes.append(lines)
            time.sleep(0.3)
        final = subprocess.run([*tmux, "capture-pane", "-p", "-S", "-100", "-t", session],
                               check=True, capture_output=True, text=True, timeout=30).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)
    assert done.exists(), "volbench run did not finish"
    assert len(live) >= 3, panes[-3:]  # the live line was there while it ran
    assert all(len(line) < width for line in live)
    assert len(set(live)) >= 3  # redrawn: the elapsed time and counts moved
    assert any(" here nap rep " in line or " there nap rep " in line for line in live)
    lines = [line.rstrip() for line in final.splitlines()]
    assert sum(bool(FINISHED.match(line)) for line in lines) == 6, lines
    assert not any(LIVE.match(line) for line in lines)  # none left at the end
    assert lines[lines.index("6 runs planned, about 10 s") + 1].startswith("1/6 ")


def test_plain_lines_with_the_time_left_in_a_pipe(tmp_path: Path) -> None:
    file = _experiment(tmp_path)
    done = subprocess.run([_volbench(), "run", str(file), "--db", str(tmp_path / "p.db")],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stderr.splitlines()
    assert lines[0] == "6 runs planned, about 10 s"
    finished = [line for line in lines if FINISHED.match(line)]
    assert len(finished) == 6 and "\r" not in done.stderr
    assert all(re.search(r"  \[\d+ s elapsed, \d+ s left\]$", line) for line in finished)
    assert finished[-1].endswith(", 0 s left]")
    quiet = subprocess.run([_volbench(), "run", str(file), "--db", str(tmp_path / "q.db"),
                            "--quiet"], capture_output=True, text=True, timeout=120, check=True)
    assert not any(FINISHED.match(line) for line in quiet.stderr.splitlines())
    assert "runs planned" not in quiet.stderr


def test_the_lab_guest_s_run_leaves_the_report_to_the_host(tmp_path: Path) -> None:
    """`lab run` has the guest's run skip the report (`--no-report`, hidden): the host
    reports from the database it gets back; the guest still says how its runs ended."""
    file, db = _experiment(tmp_path), tmp_path / "g.db"
    done = subprocess.run([_volbench(), "run", str(file), "--db", str(db), "--no-report",
                           "--quiet"], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == f"6 ok; results in {db}\n"
    assert not (tmp_path / "g-report.md").exists() and db.exists()
