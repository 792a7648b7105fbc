"""The resource journal: every resource is written down *before* it is created.

One journal file per volbench process under the state directory. A `Scope` is a
stack of resources (one per target, say) that tears down in reverse order; the
undo for each kind of resource is registered once (`@undoer("loop")`) and is the
same code on the normal path and in `volbench cleanup`, which replays the
journals of processes that died without tearing down.

Undo functions must be idempotent and tolerate a resource that was journaled but
never created (volbench may have been killed in between).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.system import procfs

Undo = Callable[[Mapping[str, Any]], None]
UNDO: dict[str, Undo] = {}
# Run by `cleanup` before a dead process's journal is replayed in reverse order.
FIRST: dict[str, Undo] = {}


def undoer(kind: str) -> Callable[[Undo], Undo]:
    """Register how to remove a resource of `kind` (used by teardown and cleanup)."""

    def register(fn: Undo) -> Undo:
        UNDO[kind] = fn
        return fn

    return register


def first_in_cleanup(kind: str) -> Callable[[Undo], Undo]:
    """Register a step `volbench cleanup` takes for `kind` before replaying the rest:
    ending a dead run's processes, which would otherwise keep its mounts busy, and
    before that (these steps go newest first) ending a fault that keeps them from
    ending. The step is taken again in the replay: it must do nothing the second time."""

    def register(fn: Undo) -> Undo:
        FIRST[kind] = fn
        return fn

    return register


def state_dir() -> Path:
    """Where journals and run-time state live; VOLBENCH_STATE_DIR overrides (tests use it)."""
    override = os.environ.get("VOLBENCH_STATE_DIR")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/run/volbench")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "volbench" if runtime else Path(f"/tmp/volbench-{os.getuid()}")




@dataclass
class Entry:
    id: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class Journal:
    """Append-only JSON-lines file; each line is flushed before the resource is touched."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = 1
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the journal
        self._open: dict[int, Entry] = {}
        # What a teardown could not remove (kept for `volbench cleanup`), in order.
        self.incomplete: list[str] = []

    @classmethod
    def create(cls, label: str) -> Journal:
        directory = state_dir() / "journals"
        pid = os.getpid()
        journal = cls(directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{pid}.jsonl")
        journal._write({"op": "owner", "pid": pid, "start": procfs.start_ticks(pid),
                        "label": label})
        return journal

    def _write(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def add(self, kind: str, **data: Any) -> Entry:
        # Not checked against UNDO here: this process may not have imported the module
        # that registers the kind (a job script tracking a process); `volbench cleanup`
        # imports them all (volbench.engine.kinds), and tests/unit/test_journal.py checks that every
        # kind the code adds has its undo.
        entry = Entry(self._next, kind, dict(data))
        self._next += 1
        self._open[entry.id] = entry
        self._write({"op": "add", "id": entry.id, "kind": kind, "data": entry.data})
        return entry

    def update(self, entry: Entry, **data: Any) -> None:
        entry.data.update(data)
        self._write({"op": "update", "id": entry.id, "data": data})

    def release(self, entry: Entry) -> None:
        self._open.pop(entry.id, None)
        self._write({"op": "release", "id": entry.id})

    def scope(self) -> Scope:
        return Scope(self)

    def close(self) -> None:
        """Close; the file is removed when nothing is left to undo."""
        self._file.close()
        if not self._open:
            self.path.unlink(missing_ok=True)

    # ProcessTracker protocol (see proc.py): foreground and background children.
    def process_started(self, pid: int, argv: Sequence[str]) -> object:
        return self.add("process", pid=pid, start=procfs.start_ticks(pid), argv=list(argv)[:4])

    def process_ended(self, token: object) -> None:
        if isinstance(token, Entry):
            self.release(token)


class Scope:
    """A stack of resources released in reverse order; errors are collected, not fatal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._entries: list[Entry] = []

    def add(self, kind: str, **data: Any) -> Entry:
        entry = self.journal.add(kind, **data)
        self._entries.append(entry)
        return entry

    def update(self, entry: Entry, **data: Any) -> None:
        self.journal.update(entry, **data)

    def release(self, entry: Entry) -> None:
        """Undo one resource now (e.g. a process stopped early)."""
        UNDO[entry.kind](entry.data)
        self.journal.release(entry)
        if entry in self._entries:
            self._entries.remove(entry)

    def forget(self, entry: Entry) -> None:
        """The resource is already gone by other means: just mark it released."""
        self.journal.release(entry)
        if entry in self._entries:
            self._entries.remove(entry)

    def close(self) -> list[str]:
        """Undo everything in reverse order; returns the error messages.

        An interruption (SIGTERM, Ctrl-C) arriving during teardown does not stop
        it: the remaining resources are still removed, then the interruption is
        raised again.
        """
        errors: list[str] = []
        interruption: BaseException | None = None
        retried: set[int] = set()
        while self._entries:
            entry = self._entries.pop()
            try:
                UNDO[entry.kind](entry.data)
                self.journal.release(entry)
            except Exception as exc:  # keep tearing down the rest; report at the end
                errors.append(f"{entry.kind} {describe(entry)}: {exc}")
            except BaseException as exc:
                interruption = interruption or exc
                if entry.id not in retried:  # interrupted mid-undo: try it once more
                    retried.add(entry.id)
                    self._entries.append(entry)
                else:
                    errors.append(f"{entry.kind} {describe(entry)}: interrupted twice")
        # Kept on the journal too: when an exception is already on its way out, these
        # would otherwise be lost with the `with` block that collected them.
        self.journal.incomplete += errors
        if interruption is not None:
            raise interruption
        return errors

    def __enter__(self) -> Scope:
        return self

    def __exit__(self, *exc: object) -> None:
        errors = self.close()
        if errors and exc[0] is None:
            raise VolbenchError(incomplete_message(errors))
        # With an exception in flight the errors stay in journal.incomplete, where the
        # runner reads them for the message it ends with.

    # ProcessTracker protocol, so processes started for this scope end with it.
    def process_started(self, pid: int, argv: Sequence[str]) -> object:
        return self.add("process", pid=pid, start=procfs.start_ticks(pid), argv=list(argv)[:4])

    def process_ended(self, token: object) -> None:
        if isinstance(token, Entry):
            self.forget(token)


@dataclass(frozen=True)
class Leftover:
    journal: Path
    owner_pid: int
    entries: tuple[Entry, ...]


def _owner_alive(pid: int, start: int | None) -> bool:
    """The journal's owner still runs: same PID and start time, and not a zombie (a killed
    volbench is a zombie until its parent reaps it; its journal is already orphaned)."""
    return procfs.running(pid, start)


def read_leftovers(directory: Path | None = None) -> list[Leftover]:
    """Journals whose owner is dead, with the entries never released (in creation order)."""
    directory = directory or state_dir() / "journals"
    found: list[Leftover] = []
    for path in sorted(directory.glob("*.jsonl")) if directory.exists() else []:
        owner_pid, owner_start = -1, None
        entries: dict[int, Entry] = {}
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash: the entry before it is what matters
            op = rec.get("op")
            if op == "owner":
                owner_pid, owner_start = rec["pid"], rec.get("start")
            elif op == "add":
                entries[rec["id"]] = Entry(rec["id"], rec["kind"], rec.get("data", {}))
            elif op == "update" and rec["id"] in entries:
                entries[rec["id"]].data.update(rec.get("data", {}))
            elif op == "release":
                entries.pop(rec["id"], None)
        if owner_pid > 0 and _owner_alive(owner_pid, owner_start):
            continue
        found.append(Leftover(path, owner_pid, tuple(entries.values())))
    return found


@contextmanager
def opened(label: str) -> Iterator[Journal]:
    journal = Journal.create(label)
    try:
        yield journal
    finally:
        journal.close()


def cleanup(directory: Path | None = None) -> tuple[list[str], list[str]]:
    """Undo what dead volbench processes left behind: (removed, errors).

    Call it through `volbench.engine.kinds.cleanup`, which first imports every module that
    registers an undo kind (this module sits below them and cannot import them).
    """

    removed: list[str] = []
    errors: list[str] = []
    for leftover in read_leftovers(directory):
        # A first step that fails is taken again in the replay; only the replay's
        # outcome counts (a fault's undo may fail first and succeed once its processes
        # have ended).
        for entry in reversed(leftover.entries):  # a fault before the processes it holds
            if entry.kind in FIRST:
                with suppress(Exception):
                    FIRST[entry.kind](entry.data)
        failed: list[tuple[Entry, Undo, Exception]] = []
        kept = False
        for entry in reversed(leftover.entries):
            undo = UNDO.get(entry.kind)
            if undo is None:
                errors.append(f"{leftover.journal.name}: unknown resource kind {entry.kind}")
                kept = True
                continue
            try:
                undo(entry.data)
                removed.append(f"{entry.kind} {describe(entry)}")
            except Exception as first:
                failed.append((entry, undo, first))
        # Once more, after the rest: an undo can fail on what the entries journalled
        # before it still held. Seen in the lab (2026-11-29): a run killed inside the
        # lvcreate of a thin fault's filler left LVM refusing the filler's removal while
        # the target's thin volume held the pool ("pool-tpool is used by another
        # device"); the VG's removal after it took the filler, and the fault's undo,
        # taken again, found the pool gone and had nothing left to do. Undos are
        # idempotent (every one checks what is there), so a second try is safe.
        for entry, undo, first_error in failed:
            try:
                undo(entry.data)
                removed.append(f"{entry.kind} {describe(entry)}")
            except Exception as again:
                errors.append(f"{entry.kind} {describe(entry)}: {again}"
                              + (f" (first try: {first_error})"
                                 if str(first_error) != str(again) else ""))
                kept = True
        if not kept:
            leftover.journal.unlink(missing_ok=True)
    return removed, errors


def incomplete_message(errors: Sequence[str]) -> str:
    return ("teardown incomplete, could not remove: " + "; ".join(errors)
            + "; run `volbench cleanup` to finish removing it")


def describe(entry: Entry) -> str:
    keys = ("path", "device", "mountpoint", "pid", "name", "backing")
    return " ".join(f"{k}={entry.data[k]}" for k in keys if k in entry.data)


@undoer("process")
def _undo_process(data: Mapping[str, Any]) -> None:
    # Registered here, beside the trackers that journal processes, so every process that
    # journals one can also end it.
    procfs.end_group(int(data["pid"]), data.get("start"))
