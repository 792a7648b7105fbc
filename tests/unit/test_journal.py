"""The journal: written before creation, torn down in reverse, replayed by cleanup."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import volbench
from volbench.core.errors import CommandFailed
from volbench.engine import kinds
from volbench.system import journal

CALLS: list[str] = []


@journal.undoer("test-thing")
def _undo_thing(data: Mapping[str, Any]) -> None:
    CALLS.append(str(data["name"]))
    if data.get("interrupt_once") and CALLS.count(str(data["name"])) == 1:
        raise KeyboardInterrupt
    if data.get("fail"):
        raise OSError("cannot remove")


def test_scope_undoes_in_reverse_and_collects_errors() -> None:
    CALLS.clear()
    with journal.opened("t") as j:
        scope = j.scope()
        for name in ("a", "b", "c"):
            scope.add("test-thing", name=name, fail=name == "b")
        errors = scope.close()
    assert CALLS == ["c", "b", "a"]
    assert len(errors) == 1 and "cannot remove" in errors[0]


def test_an_interruption_during_teardown_still_tears_down_everything() -> None:
    CALLS.clear()
    with journal.opened("t") as j:
        scope = j.scope()
        for name in ("a", "b", "c"):
            scope.add("test-thing", name=name, interrupt_once=name == "b")
        with pytest.raises(KeyboardInterrupt):
            scope.close()
    assert CALLS == ["c", "b", "b", "a"]


def test_entries_are_on_disk_before_the_resource_exists() -> None:
    with journal.opened("t") as j:
        entry = j.scope().add("test-thing", name="x")
        lines = [json.loads(x) for x in j.path.read_text().splitlines()]
        assert lines[0]["op"] == "owner"
        assert lines[-1] == {"op": "add", "id": entry.id, "kind": "test-thing",
                             "data": {"name": "x"}}
        j.release(entry)


def test_a_journal_with_nothing_left_is_removed() -> None:
    with journal.opened("t") as j:
        scope = j.scope()
        scope.add("test-thing", name="x")
        scope.close()
        path = j.path
    assert not path.exists()


def test_cleanup_replays_only_journals_of_dead_owners(tmp_path: Path) -> None:
    CALLS.clear()
    # A journal written by a process that then died without tearing down.
    script = ("from volbench.system.block import devices\n"
              "from volbench.system import journal\nimport os\n"
              "j = journal.Journal.create('dead')\n"
              "j.add('file', path='" + str(tmp_path / "gone.img") + "')\n"
              "os._exit(9)\n")
    (tmp_path / "gone.img").write_text("x")
    subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    with journal.opened("alive") as j:  # ours, alive: must be left alone
        entry = j.add("test-thing", name="mine")
        removed, errors = kinds.cleanup()
        assert not errors
        assert removed == [f"file path={tmp_path / 'gone.img'}"]
        assert not (tmp_path / "gone.img").exists()
        assert CALLS == []
        j.release(entry)
    assert not journal.read_leftovers()


def test_a_truncated_last_line_is_ignored(tmp_path: Path) -> None:
    directory = tmp_path / "journals"
    directory.mkdir()
    (directory / "x.jsonl").write_text(
        '{"op": "owner", "pid": 999999999, "start": 1, "label": "x"}\n'
        '{"op": "add", "id": 1, "kind": "file", "data": {"path": "/nonexistent/a"}}\n'
        '{"op": "add", "id": 2, "ki')
    (left,) = journal.read_leftovers(directory)
    assert [e.id for e in left.entries] == [1]


def test_a_zombie_owner_counts_as_dead(tmp_path: Path) -> None:
    """A SIGKILLed volbench is a zombie until reaped: its journal is already orphaned."""
    script = ("from volbench.system.block import devices\n"
              "from volbench.system import journal\nimport os, sys\n"
              "j = journal.Journal.create('dead')\n"
              "j.add('file', path='" + str(tmp_path / "z.img") + "')\n"
              "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
              "os.kill(os.getpid(), 9)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
        assert time.monotonic() < deadline
    leftovers = journal.read_leftovers()  # child not reaped yet: a zombie
    assert [left.owner_pid for left in leftovers] == [child.pid]
    child.wait()


def _journaled_kinds() -> dict[str, set[str]]:
    """Module name -> the resource kinds its code journals (scope.add("kind", …))."""
    src = Path(volbench.__file__).parent
    found: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        added = set(re.findall(r"""\.add\(\s*["']([a-z][a-z0-9-]*)["']""", path.read_text()))
        if added:
            parts = path.relative_to(src.parent).with_suffix("").parts
            found[".".join(p for p in parts if p != "__init__")] = added
    return found


@pytest.mark.slow
def test_every_module_that_journals_a_kind_can_undo_it_alone() -> None:
    """Each process tears down what it journaled (a job script's remote directories, a
    tracked process): importing the module that journals a kind must register its undo,
    in a fresh interpreter with nothing else imported."""
    found = _journaled_kinds()
    assert {"loop", "mount", "process", "cgroup", "postgres"} <= set().union(*found.values())
    check = ("import importlib, sys; from volbench.system import journal\n"
             "for arg in sys.argv[1:]:\n"
             "    module, kinds = arg.split('=')\n"
             "    importlib.import_module(module)\n"
             "    missing = set(kinds.split(',')) - set(journal.UNDO)\n"
             "    assert not missing, (module, missing)\n")
    for module, added in sorted(found.items()):
        done = subprocess.run([sys.executable, "-c", check, f"{module}={','.join(added)}"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr.strip().splitlines()[-1]


def test_cleanup_takes_its_first_steps_newest_first(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault registered to go first (nfsd stopped under a hard mount) is ended before
    the dead run's processes (its cgroup's), which wait on it; then the usual replay."""
    order: list[str] = []
    monkeypatch.setitem(journal.FIRST, "test-procs", lambda d: order.append("first procs"))
    monkeypatch.setitem(journal.FIRST, "test-fault", lambda d: order.append("first fault"))
    monkeypatch.setitem(journal.UNDO, "test-procs", lambda d: order.append("procs"))
    monkeypatch.setitem(journal.UNDO, "test-fault", lambda d: order.append("fault"))
    directory = tmp_path / "journals"
    directory.mkdir()
    (directory / "x.jsonl").write_text(
        '{"op": "owner", "pid": 999999999, "start": 1, "label": "x"}\n'
        '{"op": "add", "id": 1, "kind": "test-procs", "data": {}}\n'
        '{"op": "add", "id": 2, "kind": "test-fault", "data": {}}\n')
    removed, errors = journal.cleanup(directory)
    assert errors == [] and len(removed) == 2
    assert order == ["first fault", "first procs", "fault", "procs"]


def _dead_journal(directory: Path, *kinds: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / "x.jsonl"
    lines = ['{"op": "owner", "pid": 999999999, "start": 1, "label": "x"}']
    lines += [f'{{"op": "add", "id": {i}, "kind": "{k}", "data": {{}}}}'
              for i, k in enumerate(kinds, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cleanup_tries_a_failed_undo_again_after_the_rest(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault's undo that fails on what an earlier entry still holds (the lab's thin pool,
    held by the target's volume after a kill inside lvcreate) is taken again once the
    rest is undone; it then succeeds, nothing is reported and the journal goes."""
    held = {"volume": True}
    order: list[str] = []

    def fault(_: Mapping[str, Any]) -> None:
        order.append("fault")
        if held["volume"]:
            raise CommandFailed(["lvremove"], 5, "pool-tpool is used by another device")

    def volume(_: Mapping[str, Any]) -> None:
        order.append("volume")
        held["volume"] = False

    monkeypatch.setitem(journal.UNDO, "test-volume", volume)
    monkeypatch.setitem(journal.UNDO, "test-fault", fault)
    path = _dead_journal(tmp_path / "journals", "test-volume", "test-fault")
    removed, errors = journal.cleanup(tmp_path / "journals")
    assert errors == []
    assert order == ["fault", "volume", "fault"]
    assert sorted(r.split()[0] for r in removed) == ["test-fault", "test-volume"]
    assert not path.exists()


def test_cleanup_reports_an_undo_that_fails_twice_once_and_keeps_the_journal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: Mapping[str, Any]) -> None:
        raise OSError("still busy")

    monkeypatch.setitem(journal.UNDO, "test-broken", broken)
    monkeypatch.setitem(journal.UNDO, "test-fine", lambda d: None)
    path = _dead_journal(tmp_path / "journals", "test-fine", "test-broken")
    removed, errors = journal.cleanup(tmp_path / "journals")
    assert errors == ["test-broken : still busy"]
    assert [r.split()[0] for r in removed] == ["test-fine"]
    assert path.exists()  # kept for the next `volbench cleanup`


def test_a_first_step_that_fails_counts_only_if_its_replay_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first step is taken again in the replay (first_in_cleanup): a first try that
    fails while the replay succeeds is no error, and the journal goes."""
    tries: list[str] = []

    def first(_: Mapping[str, Any]) -> None:
        tries.append("first")
        raise OSError("not yet")

    monkeypatch.setitem(journal.FIRST, "test-fault", first)
    monkeypatch.setitem(journal.UNDO, "test-fault", lambda d: tries.append("replay"))
    path = _dead_journal(tmp_path / "journals", "test-fault")
    removed, errors = journal.cleanup(tmp_path / "journals")
    assert errors == [] and len(removed) == 1 and tries == ["first", "replay"]
    assert not path.exists()


def test_cleanup_keeps_a_journal_with_a_kind_it_cannot_undo(tmp_path: Path) -> None:
    path = _dead_journal(tmp_path / "journals", "test-no-such-kind")
    removed, errors = journal.cleanup(tmp_path / "journals")
    assert removed == [] and errors == ["x.jsonl: unknown resource kind test-no-such-kind"]
    assert path.exists()
