"""The host's half of a power cut: what each lab disk had made durable, put on its image.

The guest cannot see the disk images, and what a disk with a volatile cache had made
durable at the cut is a property of that disk, so the host does it
(faults/powercut.py asks through the lab's request folder, lab/faultbridge.py):

    power-base     before a cycle (the guest holds the disk's I/O): the disk's data
                   region copied to IMAGE.base, holes kept (SEEK_DATA/SEEK_HOLE)
    power-restore  after the cut (the stack above is gone, the log complete): every
                   sector the cycle's log touched put back from IMAGE.base, then the
                   log's durable writes applied in order (system/block/writelog.py)

So the image holds the disk at the start of the cycle plus exactly the writes a
volatile cache had made durable: the guest's kernel then recovers from that. The log
is the guest's dm-log-writes log, on a slice of the lab's log disk (an uncapped,
write-through lab disk: QEMU writes it straight into its image file).

The images are open in QEMU with O_DIRECT; these reads and writes go through the
host's page cache, which O_DIRECT writes invalidate, and end with fdatasync, so QEMU
reads what was written here. Cached pages of the log and base are dropped before they
are read (a log slice is rewritten every cycle).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volbench.config.lab import LabSpec
from volbench.lab.errors import LabError
from volbench.system.block import writelog

ACTIONS = ("power-base", "power-restore")
CHUNK = 4 * 1024 * 1024


def base_path(image: Path) -> Path:
    return image.with_name(image.stem + ".base")


def _data_extents(fd: int, start: int, stop: int) -> list[tuple[int, int]]:
    """(offset, length) of the allocated data in [start, stop) of a sparse file."""
    found: list[tuple[int, int]] = []
    pos = start
    while pos < stop:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                break
            raise
        if data >= stop:
            break
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), stop)
        found.append((data, hole - data))
        pos = hole
    return found


def copy_base(image: Path, offset: int, length: int) -> dict[str, Any]:
    """IMAGE's [offset, offset+length) copied to IMAGE.base at the same offsets."""
    started = time.monotonic()
    copied = 0
    base = base_path(image)
    src = os.open(image, os.O_RDONLY)
    dst = os.open(base, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.ftruncate(dst, os.fstat(src).st_size)
        os.posix_fadvise(src, offset, length, os.POSIX_FADV_DONTNEED)
        for start, size in _data_extents(src, offset, offset + length):
            done = 0
            while done < size:
                n = os.copy_file_range(src, dst, min(CHUNK * 16, size - done),
                                       start + done, start + done)
                if n <= 0:
                    raise LabError(f"{image}: copy to {base} stopped at {start + done}")
                done += n
            copied += size
    finally:
        os.close(dst)
        os.close(src)
    return {"copied_bytes": copied, "seconds": round(time.monotonic() - started, 3)}


def _put(fd: int, at: int, payload: bytes) -> None:
    done = 0
    while done < len(payload):
        done += os.pwrite(fd, payload[done:], at + done)


def restore(image: Path, log_image: Path, log_offset: int, log_bytes: int,
            data_offset: int, data_bytes: int, every_completed: bool = False
            ) -> dict[str, Any]:
    """The image made what the disk had made durable at the cut: the cycle's touched
    sectors back from IMAGE.base, then the log's durable writes in order."""
    started = time.monotonic()
    base = base_path(image)
    if not base.exists():
        raise LabError(f"{image}: no base copy ({base}) for this cycle; the guest asks "
                       "power-base before a cycle")
    img = os.open(image, os.O_RDWR)
    old = os.open(base, os.O_RDONLY)
    with open(log_image, "rb") as logf:
        os.posix_fadvise(logf.fileno(), log_offset, log_bytes, os.POSIX_FADV_DONTNEED)
        try:
            log = writelog.read_super(logf, log_offset)
            logged = list(writelog.entries(logf, log, log_bytes))
            ss = log.sectorsize
            put_back = 0
            for sector, count in writelog.touched(logged):
                at, size = data_offset + sector * ss, count * ss
                if sector * ss + size > data_bytes:
                    raise LabError(f"the log touches sector {sector + count} beyond the "
                                   f"disk's {data_bytes // ss} sectors")
                for chunk in range(0, size, CHUNK):
                    n = min(CHUNK, size - chunk)
                    piece = os.pread(old, n, at + chunk)
                    _put(img, at + chunk, piece + bytes(n - len(piece)))
                put_back += size
            kept = writelog.durable(logged, every_completed)
            for entry in kept:
                _put(img, data_offset + entry.sector * ss, writelog.data(logf, log, entry))
            os.fdatasync(img)
        except writelog.LogError as exc:
            raise LabError(f"{image}: the cycle's log cannot be read: {exc}") from exc
        finally:
            os.close(old)
            os.close(img)
    return {**writelog.summary(logged), "durable_writes": len(kept),
            "restored_bytes": put_back,
            "durable_bytes": sum(e.nr_sectors for e in kept) * ss,
            "seconds": round(time.monotonic() - started, 3)}


def _index(spec: LabSpec, name: str) -> int:
    names = [d.name for d in spec.disks]
    if name not in names:
        raise LabError(f"no lab disk {name!r} (the lab has {', '.join(names)})")
    return names.index(name)


def _span(request: Mapping[str, Any], key: str, image: Path) -> tuple[int, int]:
    offset, length = int(request[f"{key}_offset"]), int(request[f"{key}_bytes"])
    if offset < 0 or length <= 0 or offset + length > image.stat().st_size:
        raise LabError(f"{key} span {offset}+{length} is outside {image.name}")
    return offset, length


def serve(spec: LabSpec, images: Sequence[Path], request: Mapping[str, Any]
          ) -> dict[str, Any]:
    """One power request: every disk it lists, each answered with what was done."""
    action = request.get("action")
    if action not in ACTIONS:
        raise LabError(f"unknown power action {action!r}")
    done: dict[str, Any] = {}
    for disk in request.get("disks", []):
        name = str(disk.get("disk", ""))
        image = images[_index(spec, name)]
        offset, length = _span(disk, "data", image)
        if action == "power-base":
            done[name] = copy_base(image, offset, length)
            continue
        log_image = images[_index(spec, str(disk.get("log_disk", "")))]
        log_offset, log_bytes = _span(disk, "log", log_image)
        done[name] = restore(image, log_image, log_offset, log_bytes, offset, length,
                             bool(disk.get("every_completed", False)))
    return {"action": action, "disks": done}
