"""Block devices volbench makes for itself: image files, loop devices, zram.

Each create function journals the resource first (see journal.py) and records
the command it ran in the caller's recipe.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.core.errors import CommandFailed, ResourceError
from volbench.system import proc
from volbench.system.host.tools import require
from volbench.system.journal import Entry, Scope, undoer
from volbench.system.recipe import Recipe

# Seconds to wait for a free loop device before giving up; this machine has only
# eight and test suites share them (tests set VOLBENCH_LOOP_WAIT).
LOOP_WAIT_ENV = "VOLBENCH_LOOP_WAIT"


def create_image(scope: Scope, recipe: Recipe, path: Path, size: int,
                 *, preallocate: bool = False) -> Path:
    """A sparse (default) or fully allocated image file."""
    scope.add("file", path=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if preallocate:
        recipe.run(["fallocate", "-l", str(size), str(path)], timeout=600)
    else:
        recipe.run(["truncate", "-s", str(size), str(path)], timeout=60)
    return path


def journal_file(scope: Scope, path: Path) -> Entry:
    """Journal a file about to be created, so teardown and `volbench cleanup` remove it."""
    return scope.add("file", path=str(path))


@undoer("file")
def _undo_file(data: Mapping[str, Any]) -> None:
    Path(data["path"]).unlink(missing_ok=True)


def _loop_wait() -> float:
    try:
        return float(os.environ.get(LOOP_WAIT_ENV, "0"))
    except ValueError:
        return 0.0


def attach_loop(scope: Scope, recipe: Recipe, image: Path, *, direct_io: bool = True) -> str:
    """Attach `image` to a free loop device and check direct I/O really is on.

    Without direct I/O the loop driver goes through the page cache of the file
    underneath, and fio's direct=1 would measure RAM (MACHINE-NOTES).
    """
    require("losetup")
    entry = scope.add("loop", backing=str(image.resolve()))
    argv = ["losetup", "--find", "--show", f"--direct-io={'on' if direct_io else 'off'}",
            str(image)]
    deadline = time.monotonic() + _loop_wait()
    while True:
        try:
            device = recipe.run(argv, timeout=60).stdout.strip()
            break
        except CommandFailed as exc:
            if "free loop" not in exc.stderr or time.monotonic() >= deadline:
                if "free loop" in exc.stderr:
                    raise ResourceError(
                        "no free loop device; detach unused ones (losetup -l, then "
                        "losetup -d DEV, or `volbench cleanup` for volbench's own) "
                        "or load the loop module with a larger max_loop") from exc
                raise
            time.sleep(1.0)
    scope.update(entry, device=device)
    if direct_io and loop_direct_io(device) is False:
        raise ResourceError(
            f"{device} fell back to buffered I/O: the filesystem holding {image} does not "
            "support O_DIRECT (tmpfs?); put the images on a disk filesystem (set workdir)")
    return device


def loop_direct_io(device: str) -> bool | None:
    path = Path("/sys/block") / Path(device).name / "loop" / "dio"
    try:
        return path.read_text().strip() == "1"
    except OSError:
        return None


def loops_backed_by(backing: str) -> list[str]:
    """Loop devices whose backing file is `backing` (read from losetup's JSON)."""
    out = proc.run(["losetup", "--json", "--list"], timeout=30, check=False).stdout
    if not out.strip():
        return []
    devices = json.loads(out).get("loopdevices", [])
    found = []
    for dev in devices:
        back = str(dev.get("back-file") or "")
        # A deleted backing file shows as "/path (deleted)".
        if back == backing or back.removesuffix(" (deleted)") == backing:
            found.append(str(dev["name"]))
    return found


# struct loop_info64 (linux/loop.h) is 232 bytes; lo_offset is its fourth u64. The set
# ioctl takes the struct as the get ioctl gave it, with only the offset changed.
LOOP_SET_STATUS64, LOOP_GET_STATUS64 = 0x4C04, 0x4C05
LOOP_INFO64_BYTES, LO_OFFSET_AT = 232, 24


def loop_backing(device: str) -> str | None:
    """The image behind loop `device` (sysfs), None when it has none (or is no loop)."""
    path = Path("/sys/block") / Path(device).name / "loop" / "backing_file"
    try:
        return path.read_text().strip().removesuffix(" (deleted)")
    except OSError:
        return None


def set_loop_offset(device: str, backing: str, offset: int) -> None:
    """Start loop `device` `offset` bytes into its image: its capacity becomes the image's
    size minus that (at the image's size: 0, what the kernel leaves of a disk that was
    removed; at 0: the whole image again). Works while the device is open. Refused when
    `device` is no longer backed by `backing`: loop devices are reused by number."""
    if loop_backing(device) != backing:
        raise ResourceError(f"{device} is no longer the loop device of {backing}; "
                            "nothing was changed")
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        info = bytearray(LOOP_INFO64_BYTES)
        fcntl.ioctl(fd, LOOP_GET_STATUS64, info)
        struct.pack_into("=Q", info, LO_OFFSET_AT, offset)
        for _ in range(50):  # the kernel answers EAGAIN while it drops the page cache
            try:
                fcntl.ioctl(fd, LOOP_SET_STATUS64, info)
                return
            except OSError as exc:
                if exc.errno != errno.EAGAIN:
                    raise ResourceError(f"{device}: LOOP_SET_STATUS64 (offset {offset}): "
                                        f"{exc.strerror}") from exc
                time.sleep(0.1)
        raise ResourceError(f"{device}: the kernel kept answering EAGAIN to a new offset")
    finally:
        os.close(fd)


BLKROSET, BLKROGET = 0x125D, 0x125E


def set_read_only(device: str, backing: str, read_only: bool) -> None:
    """Mark loop `device` read-only (BLKROSET) or writable again, while it is open: the
    block layer then refuses every write bio at submission (bio_check_ro; EPERM to a
    process writing the device, EIO to a filesystem on it). Refused when `device` is no
    longer backed by `backing`."""
    if loop_backing(device) != backing:
        raise ResourceError(f"{device} is no longer the loop device of {backing}; "
                            "nothing was changed")
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, BLKROSET, struct.pack("=i", 1 if read_only else 0))
    except OSError as exc:
        raise ResourceError(f"{device}: BLKROSET {int(read_only)}: {exc.strerror}") from exc
    finally:
        os.close(fd)


def in_flight(device: str) -> int:
    """Requests the device has queued and not completed (sysfs `inflight`, reads and
    writes); 0 when it cannot say."""
    try:
        text = (Path("/sys/block") / Path(device).name / "inflight").read_text()
    except OSError:
        return 0
    return sum(int(n) for n in text.split())


@undoer("loop")
def _undo_loop(data: Mapping[str, Any]) -> None:
    devices = set(loops_backed_by(data["backing"]))
    for device in sorted(devices):
        proc.run(["losetup", "--detach", device], timeout=60)


def create_zram(scope: Scope, recipe: Recipe, size: int, algorithm: str | None) -> str:
    """A new zram device (never an existing one: those may be someone's swap)."""
    control = Path("/sys/class/zram-control/hot_add")
    if not control.exists():
        raise ResourceError("zram is not available: load it with `modprobe zram`")
    entry = scope.add("zram")
    index = control.read_text().strip()
    scope.update(entry, index=int(index))
    block = Path(f"/sys/block/zram{index}")
    if algorithm:
        recipe.write(block / "comp_algorithm", algorithm)
    recipe.write(block / "disksize", str(size))
    return f"/dev/zram{index}"


@undoer("zram")
def _undo_zram(data: Mapping[str, Any]) -> None:
    if "index" not in data:
        return
    index = int(data["index"])
    block = Path(f"/sys/block/zram{index}")
    if block.exists():
        (block / "reset").write_text("1")
        Path("/sys/class/zram-control/hot_remove").write_text(str(index))


def device_bytes(device: str) -> int | None:
    """Size of a block device from sysfs (512-byte sectors), if it can be read."""
    try:
        sectors = Path(f"/sys/class/block/{Path(device).resolve().name}/size").read_text()
    except (OSError, ValueError):
        return None
    return int(sectors) * 512 if sectors.strip().isdigit() else None


def discard_max_bytes(device: str) -> int | None:
    """How much one discard may cover (0: the device does not take discards), from sysfs."""
    name = Path(device).resolve().name
    try:
        text = Path(f"/sys/class/block/{name}/queue/discard_max_bytes").read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def logical_block_size(device: str) -> int | None:
    """The device's logical block size in bytes (a partition's is its disk's), if known."""
    name = Path(device).resolve().name
    for queue in (f"/sys/class/block/{name}/queue", f"/sys/class/block/{name}/../queue"):
        with contextlib.suppress(OSError):
            text = Path(queue, "logical_block_size").read_text().strip()
            return int(text) if text.isdigit() else None
    return None


def device_number(device: str) -> str:
    """'MAJ:MIN' of a block device node, as cgroup files want it."""
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def write_cache_modes(devices: list[str]) -> dict[str, str]:
    """Each device's write cache as its kernel sees it ("write back" / "write through").

    Recorded with every target: with "write back" each fsync is a flush the device (and,
    under an LV or array, each of its members) must carry out, with "write through" the
    kernel sends none, and fsync-heavy results (a database's commits) follow from that.
    """
    modes = {}
    for device in devices:
        name = os.path.basename(os.path.realpath(device))
        path = Path("/sys/class/block") / name / "queue" / "write_cache"
        if not path.exists():  # a partition: the queue is its disk's
            path = Path("/sys/class/block") / name / ".." / "queue" / "write_cache"
        try:
            modes[device] = path.read_text().strip()
        except OSError:
            continue
    return modes


def topology(devices: list[str]) -> list[dict[str, Any]]:
    """lsblk's JSON view of the devices (with their holders and children)."""
    if not devices:
        return []
    out = proc.run(["lsblk", "--json", "-O", *devices], timeout=30, check=False).stdout
    try:
        return list(json.loads(out).get("blockdevices", []))
    except json.JSONDecodeError:
        return []
