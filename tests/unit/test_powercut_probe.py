"""The power cut's probe: its blocks, its ledger, and what a read-back counts as lost."""

from __future__ import annotations

import os
import time
from pathlib import Path

from volbench.faults import probe

SLOTS = 16


def _spec(tmp_path: Path, cycle: int = 5) -> probe.ProbeSpec:
    return probe.ProbeSpec(tmp_path / "probe", tmp_path / "ledger", cycle, slots=SLOTS)


def _put(spec: probe.ProbeSpec, slot: int, data: bytes) -> None:
    fd = os.open(spec.path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, slot * probe.BLOCK)
    finally:
        os.close(fd)


def _ack(spec: probe.ProbeSpec, seq: int, slot: int, at: float) -> None:
    with open(spec.ledger, "a") as f:
        f.write(f"{seq} {slot} {at:.6f}\n")


def test_a_block_names_itself_in_every_sector() -> None:
    raw = probe.block(9, 12, 3)
    assert len(raw) == probe.BLOCK
    for sector in range(8):
        magic, cycle, seq, slot, index = probe.HEAD.unpack_from(raw, sector * 512)
        assert (magic, cycle, seq, slot, index) == (probe.MAGIC, 9, 12, 3, sector)


def test_writes_that_are_all_there_lose_nothing(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    probe.prepare(spec)
    now = time.time()
    for seq in range(1, 21):  # the ring wraps: slot 0..15 then 0..3 again
        slot = (seq - 1) % SLOTS
        _put(spec, slot, probe.block(spec.cycle, seq, slot))
        _ack(spec, seq, slot, now - 1)
    found = probe.check(spec, now)
    assert (found.acked, found.slots_checked, found.acked_lost) == (20, 16, 0)


def test_stale_missing_torn_and_corrupt_blocks_are_losses(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    probe.prepare(spec)
    now = time.time()
    for seq, slot in ((1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)):
        _ack(spec, seq, slot, now - 10 + seq)
    _put(spec, 0, probe.block(spec.cycle, 1, 0))   # there
    _put(spec, 1, probe.block(spec.cycle - 1, 2, 1))  # a block of another cycle: missing
    old = probe.block(spec.cycle, 1, 2)
    _put(spec, 2, old)                              # slot 2 holds seq 1 < 3: stale
    new = probe.block(spec.cycle, 4, 3)
    _put(spec, 3, new[:2048] + probe.block(spec.cycle, 9, 3)[2048:])  # half one, half other
    bad = bytearray(probe.block(spec.cycle, 5, 4))
    bad[700] ^= 0xFF                                # one byte flipped
    _put(spec, 4, bytes(bad))
    _put(spec, 5, probe.block(spec.cycle, 8, 5))    # newer than acknowledged: no loss
    found = probe.check(spec, now)
    assert (found.stale, found.missing, found.torn, found.corrupt) == (1, 1, 1, 1)
    assert found.acked_lost == 4 and found.newer_than_acked == 1
    assert found.lost_since_s == 8.0  # the oldest lost acknowledgement: seq 2 at now-8


def test_acknowledgements_after_the_cut_do_not_count(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    probe.prepare(spec)
    now = time.time()
    _ack(spec, 1, 0, now + 0.5)  # came back after the cut: lost or not, not counted
    found = probe.check(spec, now)
    assert (found.acked, found.acked_lost) == (0, 0)


def test_the_writer_stops_on_a_failed_write_and_logs_only_what_returned(
        tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    probe.prepare(spec)
    # /dev/full accepts the open and fails every write with ENOSPC: nothing acknowledged.
    probe.write(probe.ProbeSpec(Path("/dev/full"), spec.ledger, spec.cycle, slots=SLOTS))
    assert list(probe.ledger_lines(spec.ledger)) == []


def test_a_last_ledger_line_cut_short_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    path.write_text("1 0 10.0\n2 1 11.0\n3 2")
    assert list(probe.ledger_lines(path)) == [(1, 0, 10.0), (2, 1, 11.0)]
