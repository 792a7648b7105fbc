"""The log dm-log-writes keeps, read per the kernel's documented format, and which of its
writes a disk with a volatile write cache had made durable.

Format (drivers/md/dm-log-writes.c, Documentation/admin-guide/device-mapper/
log-writes.rst; all little-endian):

    byte 0:      super   magic u64 (0x6a736677736872), version u64 (1),
                         nr_entries u64, sectorsize u32
    sector 1 on: nr_entries entries, each one sector `log_write_entry` (sector u64,
                 nr_sectors u64, flags u64, data_len u64; a mark's text follows in the
                 same sector), then nr_sectors sectors of the data written (none for a
                 discard or a mark). Sectors are the data device's logical blocks.

The target logs a write only once a flush that came *after its completion* has itself
completed (or at once for FUA): its log lists what the disk had on stable media, in
the order it got there. So after a power cut the durable writes are: every entry up to
the last FLUSH entry, and FUA writes after it. What follows the last flush is what
the target's destructor adds when the table goes (the writes that completed but no
flush covered: a volatile cache's content), then its end mark. Discards are logged like
writes; a lab disk ignores them (QEMU's discard=ignore), so they restore nothing.

A disk with no volatile cache (write-through) makes every completed write durable:
`durable(..., every_completed=True)` takes all writes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

MAGIC = 0x6A736677736872
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16


class LogError(ValueError):
    """The log is not a dm-log-writes log (or is cut short)."""


@dataclass(frozen=True)
class Entry:
    """One logged operation; `data_at` is where its data starts in the file."""

    index: int
    sector: int
    nr_sectors: int
    flags: int
    data_at: int
    mark: str = ""

    @property
    def is_write(self) -> bool:
        return not self.flags & (DISCARD | MARK) and self.nr_sectors > 0


@dataclass(frozen=True)
class Log:
    """The super of a log at `offset` in a file: entries and the sector size."""

    offset: int
    entries: int
    sectorsize: int


def read_super(f: BinaryIO, offset: int = 0) -> Log:
    f.seek(offset)
    raw = f.read(SUPER.size)
    if len(raw) < SUPER.size:
        raise LogError("the log is shorter than its super block")
    magic, version, entries, sectorsize = SUPER.unpack(raw)
    if magic != MAGIC:
        raise LogError(f"no dm-log-writes super at offset {offset} (magic {magic:#x})")
    if version != 1 or sectorsize not in (512, 1024, 2048, 4096):
        raise LogError(f"dm-log-writes log version {version}, sector size {sectorsize}: "
                       "not the format this reader knows")
    return Log(offset, entries, sectorsize)


def entries(f: BinaryIO, log: Log, limit: int | None = None) -> Iterator[Entry]:
    """The log's entries in order (data not read: see `data`). `limit`: the log's size,
    past which an entry is a log cut short."""
    ss = log.sectorsize
    pos = log.offset + ss
    end = log.offset + limit if limit is not None else None
    for index in range(log.entries):
        f.seek(pos)
        head = f.read(ss)
        if len(head) < ss:
            raise LogError(f"entry {index} of {log.entries} is past the end of the log")
        sector, nr, flags, data_len = ENTRY.unpack_from(head)
        mark = ""
        if flags & MARK:
            mark = head[ENTRY.size:ENTRY.size + data_len].decode(errors="replace")
        pos += ss
        entry = Entry(index, sector, nr, flags, pos, mark)
        if not flags & (DISCARD | MARK):
            pos += nr * ss
        if end is not None and pos > end:
            raise LogError(f"entry {index} runs past the log's {limit} bytes")
        yield entry


def data(f: BinaryIO, log: Log, entry: Entry) -> bytes:
    """The bytes an entry wrote."""
    f.seek(entry.data_at)
    raw = f.read(entry.nr_sectors * log.sectorsize)
    if len(raw) != entry.nr_sectors * log.sectorsize:
        raise LogError(f"entry {entry.index}'s data is cut short")
    return raw


def durable(logged: list[Entry], every_completed: bool = False) -> list[Entry]:
    """The writes a power cut leaves on the disk, in the order to apply them.

    A write-back disk: every write before the last FLUSH, and FUA writes after it (the
    flush entry itself carries no data through device-mapper: dm splits a flush with
    data into an empty flush, then the data). A write-through disk (`every_completed`):
    every write the log holds, the destructor's unflushed ones included."""
    if every_completed:
        return [e for e in logged if e.is_write]
    last = max((i for i, e in enumerate(logged) if e.flags & FLUSH), default=-1)
    return [e for i, e in enumerate(logged)
            if e.is_write and (i < last or e.flags & FUA)]


def touched(logged: list[Entry]) -> list[tuple[int, int]]:
    """Every (sector, nr_sectors) range a logged write or discard covered, merged."""
    spans = sorted((e.sector, e.sector + e.nr_sectors) for e in logged
                   if not e.flags & MARK and e.nr_sectors > 0)
    merged: list[list[int]] = []
    for start, stop in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    return [(a, b - a) for a, b in merged]


def summary(logged: list[Entry]) -> dict[str, int]:
    """Counts recorded with a cut: entries, flushes, FUA writes, writes, marks."""
    return {"entries": len(logged),
            "flushes": sum(1 for e in logged if e.flags & FLUSH),
            "fua": sum(1 for e in logged if e.flags & FUA and e.is_write),
            "writes": sum(1 for e in logged if e.is_write),
            "discards": sum(1 for e in logged if e.flags & DISCARD),
            "marks": sum(1 for e in logged if e.flags & MARK)}
