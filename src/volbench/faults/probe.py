"""The power cut's probe: writes it was told are durable, recorded outside the stack, and
read back after the recovery (the way diskchecker.pl does it).

A file of `slots` blocks of 4 KiB on the target (written in full and synced before a
cycle, generation 0). The writer rewrites the slots in a ring, one block at a time, each
followed by fdatasync (or fsync, or written with O_DSYNC); only once that returned is
the write acknowledged, and the ledger gets a line `SEQ SLOT TIME`: the ledger is a file
outside the stack under test (in the lab, the folder the host shares: the host side). A
block names itself in each of its eight 512-byte sectors (magic, cycle id, sequence
number, slot, sector) and ends in a CRC-32 of the rest.

After the recovery, for every slot the cycle acknowledged before the cut (the ledger's
times), the newest acknowledged write must be on the disk:

    lost      the block is older than that write (stale), of another cycle (missing),
              torn, or corrupt: the acknowledged write did not survive
    torn      its sectors come from different writes (part new, part old)
    corrupt   one write's sectors, but the checksum fails

A block newer than the newest acknowledgement is a write that was durable before its
acknowledgement came back: not a loss. What the writer was never told is not counted.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BLOCK = 4096
SECTOR = 512
MAGIC = b"VBPROBE1"
HEAD = struct.Struct("<8sQQII")
CRC = struct.Struct("<I")
FILE = "volbench-powercut-probe"
DEFAULT_SLOTS = 1024
SYNCS = ("fdatasync", "fsync", "dsync")


@dataclass(frozen=True)
class ProbeSpec:
    """Where a probe writes, where its ledger goes, and how it syncs."""

    path: Path
    ledger: Path
    cycle: int
    slots: int = DEFAULT_SLOTS
    sync: str = "fdatasync"


def block(cycle: int, seq: int, slot: int) -> bytes:
    """The 4 KiB a write puts in `slot`."""
    out = bytearray(BLOCK)
    fill = bytes([(seq + slot) & 0xFF]) * (SECTOR - HEAD.size)
    for sector in range(BLOCK // SECTOR):
        at = sector * SECTOR
        out[at:at + HEAD.size] = HEAD.pack(MAGIC, cycle, seq, slot, sector)
        out[at + HEAD.size:at + SECTOR] = fill
    CRC.pack_into(out, BLOCK - CRC.size, zlib.crc32(out[:BLOCK - CRC.size]))
    return bytes(out)


def _write_all(fd: int, payload: bytes, at: int) -> None:
    done = 0
    while done < len(payload):
        done += os.pwrite(fd, payload[done:], at + done)


def prepare(spec: ProbeSpec) -> None:
    """The file written in full (generation 0 of every slot) and synced, with its folder."""
    fd = os.open(spec.path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for slot in range(spec.slots):
            _write_all(fd, block(0, 0, slot), slot * BLOCK)
        os.fsync(fd)
    finally:
        os.close(fd)
    folder = os.open(spec.path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write(spec: ProbeSpec) -> None:
    """Write until a write or a sync fails (the cut); the ledger gets each
    acknowledgement. Runs in a forked child (proc.fork_call): system calls only."""
    flags = os.O_RDWR | (os.O_DSYNC if spec.sync == "dsync" else 0)
    fd = os.open(spec.path, flags)
    ledger = os.open(spec.ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sync = {"fdatasync": os.fdatasync, "fsync": os.fsync}.get(spec.sync)
    seq = 0
    try:
        while True:
            seq += 1
            slot = (seq - 1) % spec.slots
            try:
                _write_all(fd, block(spec.cycle, seq, slot), slot * BLOCK)
                if sync is not None:
                    sync(fd)
            except OSError:
                return
            os.write(ledger, f"{seq} {slot} {time.time():.6f}\n".encode())
    finally:
        os.close(ledger)
        with contextlib.suppress(OSError):
            os.close(fd)


def ledger_lines(path: Path) -> Iterator[tuple[int, int, float]]:
    """(seq, slot, time) of each acknowledgement (a last line cut short is dropped)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            yield int(parts[0]), int(parts[1]), float(parts[2])


@dataclass(frozen=True)
class ProbeResult:
    """What the read-back found (times are seconds before the cut)."""

    acked: int
    slots_checked: int
    acked_lost: int
    stale: int
    missing: int
    torn: int
    corrupt: int
    newer_than_acked: int
    # The oldest lost acknowledgement, seconds before the cut (how far back the loss went).
    lost_since_s: float | None
    last_ack_before_cut_s: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read_block(raw: bytes, cycle: int) -> tuple[str, int]:
    """("ok"|"torn"|"corrupt"|"other", seq) of one block as found."""
    heads = []
    for sector in range(BLOCK // SECTOR):
        magic, run, seq, slot, index = HEAD.unpack_from(raw, sector * SECTOR)
        heads.append((magic, run, seq, slot, index == sector))
    if len(set(h[:4] for h in heads)) > 1:
        return "torn", -1
    magic, run, seq, _slot, _ = heads[0]
    if magic != MAGIC or not all(h[4] for h in heads):
        return "corrupt", -1
    if zlib.crc32(raw[:BLOCK - CRC.size]) != CRC.unpack_from(raw, BLOCK - CRC.size)[0]:
        return "corrupt", -1
    return ("ok", seq) if run == cycle else ("other", seq)


def check(spec: ProbeSpec, cut_at: float) -> ProbeResult:
    """Read the file back and count against the ledger's acknowledgements before `cut_at`."""
    newest: dict[int, tuple[int, float]] = {}
    acked = 0
    last_ack: float | None = None
    for seq, slot, at in ledger_lines(spec.ledger):
        if at > cut_at:
            continue
        acked += 1
        last_ack = max(last_ack or at, at)
        if seq > newest.get(slot, (-1, 0.0))[0]:
            newest[slot] = (seq, at)
    counts = {"stale": 0, "missing": 0, "torn": 0, "corrupt": 0, "newer": 0}
    lost_times: list[float] = []
    with open(spec.path, "rb") as f:
        for slot, (seq, at) in sorted(newest.items()):
            f.seek(slot * BLOCK)
            raw = f.read(BLOCK)
            state, found = _read_block(raw, spec.cycle) if len(raw) == BLOCK else ("torn", -1)
            if state == "ok" and found >= seq:
                counts["newer"] += found > seq
                continue
            counts[{"ok": "stale", "other": "missing"}.get(state, state)] += 1
            lost_times.append(at)
    return ProbeResult(
        acked, len(newest), len(lost_times), counts["stale"], counts["missing"],
        counts["torn"], counts["corrupt"], counts["newer"],
        round(cut_at - min(lost_times), 3) if lost_times else None,
        round(cut_at - last_ack, 3) if last_ack is not None else None)
