"""The power cut's disk side without a kernel: the dm ioctl buffers, the dm-log-writes log
reader and its durable rule, and the host's restore of an image (lab/cutdisks.py)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from volbench.lab import cutdisks
from volbench.system.block import dmctl, writelog
from volbench.system.block.writelog import DISCARD, FLUSH, FUA, MARK

SS = 512


def test_ioctl_numbers_are_the_kernels() -> None:
    # include/uapi/linux/dm-ioctl.h: _IOWR(0xfd, nr, struct dm_ioctl), 312 bytes.
    assert dmctl.HEADER.size == 312
    assert dmctl.request_code("suspend") == 0xC138FD06
    assert dmctl.request_code("load") == 0xC138FD09
    assert dmctl.request_code("create") == 0xC138FD03


def test_a_table_packs_as_chained_target_specs() -> None:
    targets = [dmctl.Target(0, 100, "linear", "253:1 2048"),
               dmctl.Target(100, 50, "error", "")]
    raw = dmctl.pack_targets(targets)
    first = dmctl.TARGET.unpack_from(raw, 0)
    assert first[:2] == (0, 100) and first[4].rstrip(b"\0") == b"linear"
    assert first[3] % 8 == 0
    second = dmctl.TARGET.unpack_from(raw, first[3])
    assert second[:2] == (100, 50) and second[4].rstrip(b"\0") == b"error"
    assert raw[dmctl.TARGET.size:].split(b"\0", 1)[0] == b"253:1 2048"


def test_header_carries_the_name_and_the_udev_cookie() -> None:
    raw = dmctl.pack_header("vbcut-d1", flags=dmctl.SUSPEND_FLAG, event_nr=dmctl.QUIET)
    fields = dmctl.HEADER.unpack(raw)
    assert fields[:3] == (4, 0, 0) and fields[7] == dmctl.SUSPEND_FLAG
    assert fields[8] >> 16 == 0x4E and fields[11].rstrip(b"\0") == b"vbcut-d1"
    with pytest.raises(dmctl.DmError):
        dmctl.pack_header("x" * 128)


# A log written per the kernel's format (drivers/md/dm-log-writes.c), for the rules.
def _log(entries: list[tuple[int, int, int, bytes]]) -> bytes:
    out = bytearray(struct.pack("<QQQI", writelog.MAGIC, 1, len(entries), SS).ljust(SS, b"\0"))
    for sector, nr, flags, data in entries:
        head = struct.pack("<QQQQ", sector, nr, flags, len(data) if flags & MARK else 0)
        out += (head + (data if flags & MARK else b"")).ljust(SS, b"\0")
        if not flags & (MARK | DISCARD):
            out += data
    return bytes(out)


def _entries(tmp_path: Path, raw: bytes) -> list[writelog.Entry]:
    path = tmp_path / "log"
    path.write_bytes(raw)
    with open(path, "rb") as f:
        return list(writelog.entries(f, writelog.read_super(f)))


def test_durable_means_before_the_last_flush_or_fua(tmp_path: Path) -> None:
    w = bytes(SS)
    logged = _entries(tmp_path, _log([
        (10, 1, 0, w), (11, 1, 0, w), (0, 0, FLUSH, b""),   # flushed: durable
        (12, 1, FUA, w),                                    # FUA: durable at once
        (13, 1, 0, w), (0, 0, FLUSH, b""),                  # flushed too
        (14, 1, 0, w), (15, 1, 0, w),                       # no flush after: a cache's
        (0, 0, MARK, b"dm-log-writes-end")]))
    assert [e.sector for e in writelog.durable(logged)] == [10, 11, 12, 13]
    assert [e.sector for e in writelog.durable(logged, every_completed=True)] == \
        [10, 11, 12, 13, 14, 15]
    assert logged[-1].mark == "dm-log-writes-end"
    assert writelog.summary(logged)["flushes"] == 2


def test_touched_ranges_are_merged_and_include_discards(tmp_path: Path) -> None:
    logged = _entries(tmp_path, _log([
        (10, 2, 0, bytes(2 * SS)), (12, 1, 0, bytes(SS)), (40, 8, DISCARD, b""),
        (0, 0, FLUSH, b"")]))
    assert writelog.touched(logged) == [(10, 3), (40, 8)]


def test_a_log_that_is_not_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(bytes(4096))
    with open(path, "rb") as f, pytest.raises(writelog.LogError):
        writelog.read_super(f)


def test_host_restore_keeps_the_base_and_the_durable_writes(tmp_path: Path) -> None:
    data_offset = 1024 * 1024
    image = tmp_path / "d1.raw"
    with open(image, "wb") as f:
        f.truncate(4 * 1024 * 1024)
        f.seek(data_offset + 100 * SS)
        f.write(b"B" * SS)  # the base's content of sector 100
    base = cutdisks.copy_base(image, data_offset, 2 * 1024 * 1024)
    assert base["copied_bytes"] >= SS
    fd = os.open(image, os.O_WRONLY)  # the cycle's writes reach the disk
    for sector, payload in ((100, b"D"), (101, b"U"), (300, b"U")):
        os.pwrite(fd, payload * SS, data_offset + sector * SS)
    os.close(fd)
    log = tmp_path / "log.raw"
    log.write_bytes(_log([(100, 1, 0, b"D" * SS), (0, 0, FLUSH, b""),
                          (101, 1, 0, b"U" * SS), (300, 1, 0, b"U" * SS),
                          (0, 0, MARK, b"dm-log-writes-end")]))
    done = cutdisks.restore(image, log, 0, log.stat().st_size, data_offset, 2 * 1024 * 1024)
    raw = image.read_bytes()
    at = lambda s: raw[data_offset + s * SS:data_offset + (s + 1) * SS]  # noqa: E731
    assert at(100) == b"D" * SS            # durable: flushed before the cut
    assert at(101) == bytes(SS)            # unflushed: back to the base (a hole, zeros)
    assert at(300) == bytes(SS)
    assert done["durable_writes"] == 1 and done["writes"] == 3


def test_host_refuses_a_span_outside_the_image(tmp_path: Path) -> None:
    from volbench.config.lab import LabDisk, LabSpec
    from volbench.lab.errors import LabError
    image = tmp_path / "d1.raw"
    image.write_bytes(bytes(4096))
    spec = LabSpec(disks=(LabDisk("d1", 4096),))
    with pytest.raises(LabError, match="outside"):
        cutdisks.serve(spec, [image], {"action": "power-base", "disks": [
            {"disk": "d1", "data_offset": 0, "data_bytes": 8192}]})
    with pytest.raises(LabError, match="no lab disk"):
        cutdisks.serve(spec, [image], {"action": "power-base", "disks": [
            {"disk": "nope", "data_offset": 0, "data_bytes": 10}]})


def test_a_runs_power_covers_its_own_stacks_disks_only() -> None:
    """A run's cut takes down only its target's stack, so it must cut only that stack's
    disks: the first `volbench run` in the lab cut both targets' disks and left the other
    target's xfs on a failing disk (EIO, then "pcr2 held by open 1 times")."""
    from volbench.config.lab import DiskClass, LabDisk, LabSpec
    from volbench.faults import powercut
    spec = LabSpec(disks=(LabDisk("a", 2**28, "wb"), LabDisk("b", 2**28, "wb")),
                   classes={"wb": DiskClass("wb", write_cache="write-back")})
    names = ["a", "b"]
    disks = powercut.cut_disks(powercut.with_log_disk(spec, names), names)
    power = powercut.Power(None, disks)  # type: ignore[arg-type]
    run = power.over(["a"])
    assert [d.name for d in run.disks] == ["a"]
    assert run.disks[0] is disks[0]  # the same wrapped disk, its log slot unchanged
