"""How a write workload makes its writes durable: the `sync:` axis (docs/workloads/fio.md).

    sync: none              # default: writes complete into the device's cache, no sync
    sync: {fdatasync: 1}    # fdatasync(2) after every write (a database's commit)
    sync: {fsync: 32}       # fsync(2) after every 32 writes
    sync: dsync             # O_DSYNC: every write returns once its data is durable
    sync: sync              # O_SYNC: the same, metadata included

A case's parameter holds the mode as one word, the way it is shown in plans and
reports: `none`, `dsync`, `sync`, `fdatasync:1`, `fsync:32` (the same words are accepted
in the file: `sync: fdatasync:1`, and `sync: fdatasync` means every write).

Part of the result model: the headline rule (core/headline.py) reads a case's mode to
judge a commit-bound case on what a committer waits for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NONE, DSYNC, SYNC = "none", "dsync", "sync"
FSYNC, FDATASYNC = "fsync", "fdatasync"
# Modes that open the file so that every write is durable when it returns.
FLAGS = (DSYNC, SYNC)
# Modes that call a sync every N writes.
CALLS = (FSYNC, FDATASYNC)
WORDS = (NONE, DSYNC, SYNC)
KINDS = (*WORDS, *CALLS)
# A sync every N writes: far beyond a useful N (a sync per 4 GiB of 4k writes), low enough
# that a typo is caught.
MAX_EVERY = 1_000_000
# The parameter's name in a case.
PARAM = "sync"


@dataclass(frozen=True)
class SyncMode:
    """One sync mode: its kind and, for fsync/fdatasync, a call every `every` writes."""

    kind: str = NONE
    every: int = 0

    @property
    def text(self) -> str:
        """The mode as a case parameter shows it: none, dsync, fdatasync:1."""
        return f"{self.kind}:{self.every}" if self.kind in CALLS else self.kind

    @property
    def syncs(self) -> bool:
        """Does a write of this mode wait for durability (the case is commit-bound)?"""
        return self.kind != NONE

    @property
    def calls(self) -> bool:
        """Does the mode call fsync/fdatasync (measured by fio as its `sync` section)?"""
        return self.kind in CALLS

    def describe(self) -> str:
        """In words, for plans: "fdatasync after every write", "O_DSYNC writes"."""
        if self.kind in CALLS:
            writes = "write" if self.every == 1 else f"{self.every} writes"
            return f"{self.kind} after every {writes}"
        return {NONE: "no sync", DSYNC: "O_DSYNC writes", SYNC: "O_SYNC writes"}[self.kind]


def _every(value: Any, kind: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            raise ValueError(f"{kind}: expected a whole number of writes per {kind}, "
                             f"got {value!r}") from None
    if not 1 <= value <= MAX_EVERY:
        raise ValueError(f"{kind}: expected a {kind} every 1 … {MAX_EVERY} writes, got {value}")
    return int(value)


EXPECTED = ("none, dsync, sync, {fsync: N} or {fdatasync: N} (a sync call every N writes)")


def parse(value: Any) -> SyncMode:
    """A mode from what the experiment file says; a ValueError's message is what the user
    reads after the field's path."""
    if isinstance(value, Mapping):
        if len(value) != 1:
            raise ValueError(f"expected one of {EXPECTED}, got a mapping of {len(value)} keys")
        key, every = next(iter(value.items()))
        if key not in CALLS:
            raise ValueError(f"'{key}' is not fsync or fdatasync (a mapping gives a sync "
                             "call every N writes: {fdatasync: 1})")
        return SyncMode(str(key), _every(every, str(key)))
    if isinstance(value, str):
        word, _, every = value.strip().partition(":")
        if word in CALLS:
            return SyncMode(word, _every(every.strip(), word) if every else 1)
        if word in WORDS and not every:
            return SyncMode(word)
    raise ValueError(f"expected one of {EXPECTED}, got {value!r}")


def convert(value: Any) -> str:
    """The axis converter: the mode's parameter text."""
    return parse(value).text


def of(params: Mapping[str, object]) -> SyncMode:
    """A case's mode from its parameters (none where it has no `sync`, or bonnie++'s
    true/false: true is -b, an fsync after every write)."""
    value = params.get(PARAM)
    if value is None or value is False:
        return SyncMode()
    if value is True:
        return SyncMode(FSYNC, 1)
    try:
        return parse(value)
    except ValueError:
        return SyncMode()
