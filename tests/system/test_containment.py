"""Every process a run starts is contained: ended with its command, its run, or by
`volbench cleanup`, whatever it does with sessions (fio's job workers call setsid)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from volbench.core.errors import Interrupted
from volbench.engine.runner import signals_raise
from volbench.system import containment, journal, proc, procfs
from volbench.system.block import cgroups

pytestmark = pytest.mark.root


def wait_gone(pid: int, start: int | None, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while procfs.running(pid, start):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def contained() -> Iterator[tuple[journal.Journal, Path]]:
    """A journal whose top scope holds a run cgroup, as `volbench run` makes one."""
    assert containment.containment_missing() is None
    with journal.opened("test") as jrnl:
        scope = jrnl.scope()
        path = containment.begin(scope)
        assert path is not None and proc.containment() == path
        try:
            yield jrnl, path
        finally:
            assert scope.close() == []
    assert not path.exists() and proc.containment() is None


def test_children_join_the_run_cgroup_and_a_throttle_cgroup_nests_inside(
        contained: tuple[journal.Journal, Path]) -> None:
    jrnl, run = contained
    done = proc.run(["cat", "/proc/self/cgroup"], timeout=30)
    assert f"blkio:{cgroups.relative(run)}\n" in done.stdout
    scope = jrnl.scope()
    throttle = cgroups.make_throttle(scope, journal_recipe(), "t", [], cgroups.Limits())
    assert throttle.parent == run
    inside = proc.run(["cat", "/proc/self/cgroup"], timeout=30, cgroup=throttle)
    assert f"blkio:{cgroups.relative(throttle)}\n" in inside.stdout
    assert scope.close() == [] and not throttle.exists()


def test_every_thread_of_a_child_is_in_the_cgroup_it_joined(
        contained: tuple[journal.Journal, Path]) -> None:
    # A child joins through `tasks` (its one thread, not the thread group: no global lock);
    # the threads it starts afterwards must be born inside, like fio's I/O threads.
    _, run = contained
    assert proc._join_file(None) == str(run / "tasks")
    script = ("import threading, pathlib, time\n"
              "t = threading.Thread(target=time.sleep, args=(0.5,)); t.start()\n"
              "for d in sorted(pathlib.Path('/proc/self/task').iterdir()):\n"
              "    print(d.name, (d / 'cgroup').read_text().replace('\\n', ' '))\n"
              "t.join()\n")
    done = proc.run([sys.executable, "-c", script], timeout=30)
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert all(f"blkio:{cgroups.relative(run)} " in line for line in lines), done.stdout


def journal_recipe() -> Any:
    from volbench.system.recipe import Recipe

    return Recipe()


# Starts `sleep N` in a session of its own and prints its PID once it is there (until
# setsid() has run, the process is still in the shell's group, which a kill would reach).
DETACHED = ('setsid sleep {n} >/dev/null 2>&1 & p=$!; '
            'while [ "$(cut -d" " -f6 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done; echo $p')


def test_a_setsid_descendant_ends_with_its_killed_command(
        contained: tuple[journal.Journal, Path]) -> None:
    """A command that times out: its descendant in a session of its own (no process group
    or parent-death signal reaches it) would run on without the command's tag."""
    script = DETACHED.format(n=300) + " > pid; sleep 60"
    with tempfile.TemporaryDirectory() as tmp:
        done = proc.run(["sh", "-c", script], timeout=2.0, check=False, cwd=tmp)
        pid = int((Path(tmp) / "pid").read_text())
    assert done.timed_out
    assert wait_gone(pid, None, 5.0), "the setsid'd sleep outlived its command"


def test_a_setsid_descendant_of_a_finished_command_ends_with_the_run(tmp_path: Path) -> None:
    """A tool may leave a daemon on purpose (lvcreate starts dmeventd): it stays until the
    run's teardown empties the run's cgroup."""
    with journal.opened("test") as jrnl:
        scope = jrnl.scope()
        try:
            assert containment.begin(scope) is not None
            done = proc.run(["sh", "-c", DETACHED.format(n=305)], timeout=30)
            pid = int(done.stdout)
            start = procfs.start_ticks(pid)
            time.sleep(0.3)
            assert procfs.running(pid, start)
        finally:
            assert scope.close() == []
    assert wait_gone(pid, start, 1.0)


STAND_IN = """
import sys, time
from pathlib import Path
from volbench.system import containment; from volbench.system import journal, proc
jrnl = journal.Journal.create("stand-in")
scope = jrnl.scope()
containment.begin(scope)
# A tool whose worker leaves the process group and ignores SIGTERM, like a stuck fio worker.
proc.start(["setsid", "--fork", "sh", "-c", "trap '' TERM; sleep 303"],
           log=Path(sys.argv[1]), tracker=scope)
print("ready", flush=True)
time.sleep(600)
"""


def test_cleanup_ends_a_setsid_worker_of_a_sigkilled_volbench(tmp_path: Path) -> None:
    """The reported leak, made deterministic: volbench is SIGKILLed while a tool's worker
    runs in a session of its own; `volbench cleanup` must end it (it did not: the
    journaled process group held only the tool's exited leader)."""
    child = subprocess.Popen([sys.executable, "-c", STAND_IN, str(tmp_path / "log")],
                             stdout=subprocess.PIPE, env=os.environ.copy())
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    assert journal.read_leftovers() == []  # its owner is alive: not left behind yet
    run = next(cgroups.BLKIO.glob(f"volbench-{child.pid}-run*"))
    deadline = time.monotonic() + 10
    # The worker is the `sh` and its `sleep`; `setsid --fork`'s own parent exits at once
    # (CI once caught it still alive and then counted its exit as the worker's death).
    while not any((procfs.cmdline(p) or [b""])[0] == b"sleep"
                  for p in procfs.cgroup_pids(run)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    workers = [(p, procfs.start_ticks(p)) for p in procfs.cgroup_pids(run)
               if (cmd := procfs.cmdline(p) or [b""])[0] in (b"sh", b"sleep")
               and b"303" in b" ".join(cmd)]
    assert workers
    child.kill()
    child.wait()
    time.sleep(0.5)
    assert all(procfs.running(*w) for w in workers), "the worker should outlive volbench"
    removed, errors = journal.cleanup()
    assert errors == []
    assert f"run-cgroup path={run}" in removed
    assert all(wait_gone(*w, 1.0) for w in workers)
    assert not run.exists()


class _SignalAfterFork(subprocess.Popen[bytes]):
    """Popen that receives SIGTERM the moment the child exists (before volbench has
    recorded it): the window in which an interrupted start used to lose the child."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _SignalAfterFork.pid_seen = self.pid
        os.kill(os.getpid(), signal.SIGTERM)

    pid_seen = 0


class _Tracker:
    def __init__(self) -> None:
        self.open: set[int] = set()

    def process_started(self, pid: int, argv: Any) -> object:
        self.open.add(pid)
        return pid

    def process_ended(self, token: object) -> None:
        assert isinstance(token, int)
        self.open.discard(token)


def test_an_interruption_while_a_child_starts_still_ends_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc.subprocess, "Popen", _SignalAfterFork)
    tracker = _Tracker()
    with signals_raise(), pytest.raises(Interrupted):
        proc.run(["sleep", "304"], timeout=60, tracker=tracker)
    pid = _SignalAfterFork.pid_seen
    assert pid and wait_gone(pid, None, 10.0), "the child was left running"
    assert not tracker.open


_FAILS: list[str] = []


@journal.undoer("test-stuck")
def _undo_stuck(data: Mapping[str, Any]) -> None:
    _FAILS.append(str(data))
    raise OSError("device or resource busy")


def test_teardown_errors_survive_an_interruption_and_name_cleanup() -> None:
    interrupted = Interrupted("SIGTERM")
    with journal.opened("test") as jrnl:
        scope = jrnl.scope()
        scope.add("test-stuck", path="/srv/x")
        with pytest.raises(Interrupted), scope:
            raise interrupted
        assert jrnl.incomplete == ["test-stuck path=/srv/x: device or resource busy"]
        jrnl.release(jrnl._open[1])  # the test resource is not real: nothing to leave
    interrupted.left_behind(jrnl.incomplete)
    text = str(interrupted)
    assert "--resume" in text and "could not remove test-stuck path=/srv/x" in text
    assert "volbench cleanup" in text
