"""device-mapper through its ioctls (/dev/mapper/control), without a process per step.

A power cut (faults/powercut.py) suspends every disk of a stack at one moment and swaps
tables on a dozen devices per cut; `dmsetup` costs a process start per step, 0.3-5 s
each in the emulated lab guest (measured), which would spread a "simultaneous" cut
over seconds. The ioctls take microseconds, so the suspends of all disks land within
milliseconds of each other.

The kernel's interface (include/uapi/linux/dm-ioctl.h, version 4): every call passes a
`struct dm_ioctl` header (312 bytes) followed by its data (a table's target specs, a
message), in one buffer whose `data_size` covers both; the kernel answers in the same
buffer. Devices are named by name; tables name their devices as MAJ:MIN.

udev: a resume (and a create or remove) makes the kernel send a uevent carrying the
`event_nr` given here as DM_COOKIE, whose top 16 bits are libdevmapper's udev flags.
`QUIET` asks udev's dm rules to keep the node but to run no disk or other rules (no
blkid, no LVM auto-activation, no md incremental assembly) on our internal devices
and on the reloads of a cut disk: a recovery assembles and activates explicitly, and a
rule racing it would assemble an md array first. The semaphore part of the cookie is 0
(no process waits), so udev's `dmsetup udevcomplete` for it does nothing.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.core.errors import ResourceError

CONTROL = "/dev/mapper/control"
# struct dm_ioctl: version[3], data_size, data_start, target_count, open_count, flags,
# event_nr, padding (u32 each), dev (u64), name[128], uuid[129], data[7].
HEADER = struct.Struct("=3IIIIiIIIQ128s129s7s")
# struct dm_target_spec: sector_start, length (u64), status (s32), next (u32),
# target_type[16]; its parameter string follows, NUL-terminated, padded to 8 bytes.
TARGET = struct.Struct("=QQiI16s")
VERSION = (4, 0, 0)
BUFFER = 16384

_IOWR = 3 << 30
CMD = {"version": 0, "create": 3, "remove": 4, "suspend": 6, "status": 7,
       "load": 9, "table": 12, "message": 14}

READONLY_FLAG = 1 << 0
SUSPEND_FLAG = 1 << 1
STATUS_TABLE_FLAG = 1 << 4
ACTIVE_PRESENT_FLAG = 1 << 5
BUFFER_FULL_FLAG = 1 << 8
SKIP_LOCKFS_FLAG = 1 << 10
NOFLUSH_FLAG = 1 << 11
# libdevmapper's udev flags (the cookie's top 16 bits): keep the dm rules (the
# /dev/mapper link), skip the subsystem, disk and other rules.
UDEV_SHIFT = 16
UDEV_DISABLE_SUBSYSTEM, UDEV_DISABLE_DISK, UDEV_DISABLE_OTHER = 0x02, 0x04, 0x08
UDEV_PRIMARY_SOURCE = 0x40
QUIET = (UDEV_DISABLE_SUBSYSTEM | UDEV_DISABLE_DISK | UDEV_DISABLE_OTHER
         | UDEV_PRIMARY_SOURCE) << UDEV_SHIFT
# A cut disk's own reloads: its /dev/mapper link and blkid stay (targets find it by
# name), but no rule may assemble or activate what is on it.
NO_AUTOASSEMBLY = (UDEV_DISABLE_OTHER | UDEV_PRIMARY_SOURCE) << UDEV_SHIFT


class DmError(ResourceError):
    """A device-mapper ioctl failed; the message names the call, the device and errno."""


@dataclass(frozen=True)
class Target:
    """One line of a table: `start length type params` (sectors of 512 bytes)."""

    start: int
    length: int
    type: str
    params: str

    def line(self) -> str:
        return f"{self.start} {self.length} {self.type} {self.params}"


@dataclass(frozen=True)
class Info:
    """What the kernel says of a device: its number, how often it is open, its state."""

    name: str
    major: int
    minor: int
    open_count: int
    suspended: bool
    has_table: bool

    @property
    def devno(self) -> str:
        """MAJ:MIN, the way a table names a device."""
        return f"{self.major}:{self.minor}"

    @property
    def node(self) -> str:
        """The device's node (devtmpfs makes /dev/dm-N for every device-mapper device)."""
        return f"/dev/dm-{self.minor}"


def request_code(cmd: str) -> int:
    """The ioctl number of a command: _IOWR(0xfd, nr, struct dm_ioctl)."""
    return _IOWR | (HEADER.size << 16) | (0xFD << 8) | CMD[cmd]


def pack_header(name: str, *, flags: int = 0, event_nr: int = 0, target_count: int = 0,
                data_size: int = BUFFER) -> bytes:
    """A request header for device `name` (data, when any, starts right after it)."""
    if len(name.encode()) >= 128:
        raise DmError(f"device-mapper name {name!r} is longer than 127 bytes")
    return HEADER.pack(*VERSION, data_size, HEADER.size, target_count, 0, flags, event_nr,
                       0, 0, name.encode(), b"", b"")


def pack_targets(targets: Sequence[Target]) -> bytes:
    """Target specs with their parameters, each padded to 8 bytes; in a request, `next`
    is the distance from one spec to the next."""
    out = b""
    for target in targets:
        params = target.params.encode() + b"\0"
        params += b"\0" * (-(TARGET.size + len(params)) % 8)
        nxt = TARGET.size + len(params)
        out += TARGET.pack(target.start, target.length, 0, nxt,
                           target.type.encode()) + params
    return out


def unpack_header(buffer: bytes) -> tuple[int, int, int, int, int, int]:
    """(data_size, data_start, target_count, open_count, flags, dev) of an answer."""
    fields = HEADER.unpack_from(buffer)
    return fields[3], fields[4], fields[5], fields[6], fields[7], fields[10]


def unpack_targets(buffer: bytes, count: int, start: int) -> list[Target]:
    """The target specs of a TABLE_STATUS answer (status text as params)."""
    found: list[Target] = []
    pos = start
    for _ in range(count):
        sector, length, _status, nxt, kind = TARGET.unpack_from(buffer, pos)
        text = buffer[pos + TARGET.size:].split(b"\0", 1)[0].decode(errors="replace")
        found.append(Target(sector, length, kind.rstrip(b"\0").decode(), text))
        pos = start + nxt  # in answers, `next` counts from the start of the data
    return found


def _call(cmd: str, name: str, data: bytes = b"", *, flags: int = 0, event_nr: int = 0,
          target_count: int = 0) -> bytearray:
    size = max(BUFFER, HEADER.size + len(data))
    buffer = bytearray(size)
    buffer[:HEADER.size] = pack_header(name, flags=flags, event_nr=event_nr,
                                       target_count=target_count, data_size=size)
    buffer[HEADER.size:HEADER.size + len(data)] = data
    try:
        fd = os.open(CONTROL, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        raise DmError(f"cannot open {CONTROL} ({exc.strerror}); device-mapper needs "
                      "`modprobe dm-mod` (the lab has it)") from exc
    try:
        fcntl.ioctl(fd, request_code(cmd), buffer)
    except OSError as exc:
        raise DmError(f"device-mapper {cmd} of {name}: {exc.strerror} "
                      f"({errno.errorcode.get(exc.errno or 0, exc.errno)}); see dmesg") from exc
    finally:
        os.close(fd)
    return buffer


def create(name: str, *, cookie: int = QUIET) -> Info:
    """A new device with no table yet."""
    _call("create", name, event_nr=cookie)
    return info(name)


def load(name: str, targets: Sequence[Target]) -> None:
    """The device's inactive table (active once resumed)."""
    _call("load", name, pack_targets(targets), target_count=len(targets))


def suspend(name: str) -> None:
    """Stop the device's I/O: new I/O waits, I/O in flight completes first. Never
    freezes a filesystem on it (SKIP_LOCKFS) and keeps nothing queued in the target
    (NOFLUSH): a cut must not write back what the filesystem holds in memory."""
    _call("suspend", name, flags=SUSPEND_FLAG | SKIP_LOCKFS_FLAG | NOFLUSH_FLAG)


def resume(name: str, *, cookie: int = QUIET) -> None:
    """Resume the device, swapping in its loaded table if there is one."""
    _call("suspend", name, event_nr=cookie)


def remove(name: str, *, cookie: int = QUIET) -> None:
    _call("remove", name, event_nr=cookie)


def message(name: str, text: str) -> None:
    """A target message (dm-log-writes: `mark NAME`)."""
    _call("message", name, struct.pack("=Q", 0) + text.encode() + b"\0")


def info(name: str) -> Info:
    buffer = _call("status", name)
    _, _, _, open_count, flags, dev = unpack_header(bytes(buffer))
    return Info(name, os.major(dev), os.minor(dev), open_count,
                bool(flags & SUSPEND_FLAG), bool(flags & ACTIVE_PRESENT_FLAG))


def exists(name: str) -> bool:
    try:
        info(name)
    except DmError as exc:
        if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.ENXIO:
            return False
        raise
    return True


def status(name: str, *, table: bool = False) -> list[Target]:
    """The active table's status lines (`table`: the table itself), as dmsetup shows them."""
    buffer = _call("table", name, flags=STATUS_TABLE_FLAG if table else 0)
    _, start, count, _, flags, _ = unpack_header(bytes(buffer))
    if flags & BUFFER_FULL_FLAG:
        raise DmError(f"device-mapper status of {name} did not fit {BUFFER} bytes")
    return unpack_targets(bytes(buffer), count, start)
