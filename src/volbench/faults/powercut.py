"""A power cut of the lab's disks: what each disk had made durable survives, nothing else.

Each lab disk a power-cut experiment uses is wrapped, before any target is built on it,
in a device-mapper device `vbcut-NAME` (/dev/mapper/vbcut-NAME): the disk's data region
(from 1 MiB to 1 MiB before its end, so no signature of the stack shows at the disk's
own offsets, where LVM, md or blkid would see it twice). Targets are built on it
(BuildContext.redirect). Its table is swapped under the live stack:

    idle        linear over the data region
    cycle       write-back disk: log-writes over the data region (`vbcut-NAME-base`, made
                for the cycle only: while it exists, LVM would find the stack's PV label
                on it as on the top, so nothing that scans runs then), logging into this
                disk's slice of the lab's log disk (`vbcut-NAME-log`): a write is
                logged once a flush that followed its completion completed (or at
                once for FUA), so the log is what the disk had made durable
                (system/block/writelog.py)
                lying disk: the same log-writes device (`vbcut-NAME-lw`) under a
                layer that acknowledges flushes without passing them on (`-lie`, its
                queue set to "write through" once the top above it has taken "write
                back" from it: the block layer then completes a flush sent to the liar
                at once and strips FUA); the disk's own write-back, every
                `writeback` seconds of its class, is a real flush sent to the
                log-writes device by a thread here
                write-through disk: no change (every completed write is durable)
    cut         every disk's device suspended (I/O in flight completes, new I/O waits),
                then an `error` table: whatever the stack above does from then on fails
    restore     the stack above gone, the log complete (its destructor runs as the
                table goes), the cycle's devices removed, the host puts the image back to
                what the disk had made durable (lab/cutdisks.py), and the idle table
                returns

The cut's moment is taken just before the first suspend; the suspends follow within
milliseconds (ioctls, system/block/dmctl.py). They are not simultaneous, and need not
be: a disk cut a moment later keeps at most what it made durable in that moment, and
an acknowledgement the application got depends only on completions each disk had
before its own suspend, which are in that disk's durable record. No error table is
loaded until every disk is suspended, so nothing can fail over to a disk still up.
Acknowledgements are counted only up to the cut's moment (the ledger's times).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from volbench.config.lab import LYING, WRITE_THROUGH, DiskClass, LabDisk, LabSpec
from volbench.faults.base import FaultError
from volbench.faults.labdisk import BY_ID, CHANNEL_ENV, ask
from volbench.system.block import dmctl
from volbench.system.block.dmctl import Target
from volbench.system.journal import Entry, Scope, first_in_cleanup, undoer

MiB = 1024**2
SECTOR = 512
# The data region: what the stack sees of a disk.
DATA_OFFSET = MiB
DATA_TAIL = MiB
# The lab's log disk: one slice per write-back or lying disk, sparse on the host.
LOG_DISK = "vbcutlog"
LOG_CLASS = "vbcut-log"
LOG_SLICE = 4 * 1024**3
# Slices on the log disk: one size whatever the experiment (the lab's disks, at most 62,
# fit), so labs merged for a shared boot agree on it; sparse, only what a cycle writes
# takes host space.
LOG_SLOTS = 64
PREFIX = "vbcut-"
# The host copies a disk's data for a cycle's base, or puts a disk back after a cut.
HOST_TIMEOUT = 600.0
LINK_TIMEOUT = 30.0


def top_name(disk: str) -> str:
    return f"{PREFIX}{disk}"


def top_path(disk: str) -> str:
    """Where targets find a wrapped disk."""
    return f"/dev/mapper/{top_name(disk)}"


@dataclass
class CutDisk:
    """One wrapped lab disk: its mode, its devices, and its log slice (None: no log)."""

    name: str
    write_cache: str
    writeback_s: float
    slot: int | None
    data_sectors: int = 0
    raw: str = ""
    log: dmctl.Info | None = None
    # The devices a cycle made under the top (removed, in this order, at the restore).
    cycle_devices: list[str] = field(default_factory=list)

    @property
    def top(self) -> str:
        return top_name(self.name)

    @property
    def logged(self) -> bool:
        """Does a cycle log this disk (write-back or lying: a volatile cache)?"""
        return self.write_cache != WRITE_THROUGH

    def idle_table(self) -> list[Target]:
        """The data region, straight (outside a cycle, and when the power is back)."""
        return _linear(self.raw, DATA_OFFSET // SECTOR, self.data_sectors)

    def log_span(self) -> tuple[int, int]:
        assert self.slot is not None
        return self.slot * LOG_SLICE, LOG_SLICE

    def request(self) -> dict[str, Any]:
        """The host's part of a cycle: where the data and the log are on the images."""
        out: dict[str, Any] = {"disk": self.name, "data_offset": DATA_OFFSET,
                               "data_bytes": self.data_sectors * SECTOR}
        if self.slot is not None:
            offset, size = self.log_span()
            out.update(log_disk=LOG_DISK, log_offset=offset, log_bytes=size)
        return out


def cut_disks(spec: LabSpec, names: Sequence[str]) -> list[CutDisk]:
    """The disks to wrap, in the lab's order, each with its log slot when it has a cache."""
    out: list[CutDisk] = []
    slot = 0
    for disk in spec.disks:
        if disk.name not in names:
            continue
        cls = spec.disk_class(disk)
        logged = cls.write_cache != WRITE_THROUGH
        out.append(CutDisk(disk.name, cls.write_cache, cls.writeback_s,
                           slot if logged else None))
        slot += int(logged)
    return out


def log_disk(spec: LabSpec, names: Sequence[str]) -> tuple[LabDisk, ...]:
    """The lab's log disk for these wrapped disks (none when none has a cache)."""
    slots = sum(1 for d in cut_disks(spec, names) if d.logged)
    return (LabDisk(LOG_DISK, LOG_SLOTS * LOG_SLICE, LOG_CLASS),) if slots else ()


def with_log_disk(spec: LabSpec, names: Sequence[str]) -> LabSpec:
    """`spec` with the log disk its power cuts need (and its class: uncapped, no cache)."""
    extra = log_disk(spec, names)
    if not extra or any(d.name == LOG_DISK for d in spec.disks):
        return spec
    return replace(spec, disks=(*spec.disks, *extra),
                   classes={**spec.classes, LOG_CLASS: DiskClass(LOG_CLASS)})


def _sectors(device: str) -> int:
    name = Path(os.path.realpath(device)).name
    return int(Path(f"/sys/class/block/{name}/size").read_text())


def _linear(device: str, offset: int, length: int) -> list[Target]:
    return [Target(0, length, "linear", f"{device} {offset}")]


def _made(name: str, table: list[Target]) -> dmctl.Info:
    dmctl.create(name)
    dmctl.load(name, table)
    dmctl.resume(name)
    return dmctl.info(name)


def _wait_link(path: str, timeout: float = LINK_TIMEOUT) -> None:
    started = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - started > timeout:
            raise FaultError(f"{path} did not appear {timeout:g} s after the device was "
                             "made (is udev running?)")
        time.sleep(0.05)


def wrap(scope: Scope, disks: Sequence[CutDisk]) -> dict[str, str]:
    """Every disk wrapped (journalled first); returns the by-id path -> wrapper map
    the targets are built through."""
    log_dev = os.path.realpath(f"{BY_ID}{LOG_DISK}")
    redirect: dict[str, str] = {}
    for disk in disks:
        entry = scope.add("powercut-disk", name=disk.name, devices=[])
        disk.raw = os.path.realpath(f"{BY_ID}{disk.name}")
        disk.data_sectors = _sectors(disk.raw) - (DATA_OFFSET + DATA_TAIL) // SECTOR
        if disk.data_sectors <= 0:
            raise FaultError(f"lab disk {disk.name} is too small for a power cut")
        names = [*([f"{disk.top}-log"] if disk.logged else []), disk.top]
        scope.update(entry, devices=names)
        if disk.logged:
            offset, size = disk.log_span()
            disk.log = _made(names[0], _linear(log_dev, offset // SECTOR, size // SECTOR))
        dmctl.create(disk.top, cookie=dmctl.NO_AUTOASSEMBLY)
        dmctl.load(disk.top, disk.idle_table())
        dmctl.resume(disk.top, cookie=dmctl.NO_AUTOASSEMBLY)
        _wait_link(top_path(disk.name))
        redirect[f"{BY_ID}{disk.name}"] = top_path(disk.name)
    return redirect


def _set_write_cache(info: dmctl.Info, mode: str) -> None:
    Path(f"/sys/block/dm-{info.minor}/queue/write_cache").write_text(mode)


def _host(action: str, disks: Sequence[CutDisk]) -> dict[str, Any]:
    channel = os.environ.get(CHANNEL_ENV)
    if not channel:
        raise FaultError("a power cut needs the lab's host (volbench lab run)")
    reply = ask(Path(channel), {"action": action, "disks": [d.request() for d in disks]},
                timeout=HOST_TIMEOUT)
    return dict(reply.get("disks", {}))


@dataclass
class Cycle:
    """What one armed cycle did: when each step happened, and the host's answers."""

    armed_at: float = 0.0
    cut_at: float | None = None
    suspends_s: dict[str, float] = field(default_factory=dict)
    base: dict[str, Any] = field(default_factory=dict)
    restored: dict[str, Any] = field(default_factory=dict)
    writebacks: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"armed_at": self.armed_at, "cut_at": self.cut_at,
                "suspend_offsets_s": self.suspends_s, "base": self.base,
                "restored": self.restored, "writebacks": self.writebacks}


class Power:
    """The lab's power over a set of wrapped disks: arm a cycle, cut, put back."""

    def __init__(self, scope: Scope, disks: Sequence[CutDisk]) -> None:
        self.scope, self.disks = scope, list(disks)
        self.cycle: Cycle | None = None
        self._entry: Entry | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._writeback: threading.Thread | None = None

    def over(self, names: Sequence[str]) -> Power:
        """The power over these disks only: a run's cut takes down its own target's stack
        (faults/powerstack.py, component), so it cuts that stack's disks and no other. A
        cut of every disk left the other targets' filesystems mounted on failing disks
        (first `volbench run` in the lab: the next target's fio got EIO, and the restore
        refused, "pcr2 held by open 1 times")."""
        return Power(self.scope, [d for d in self.disks if d.name in set(names)])

    def arm(self) -> Cycle:
        """A new cycle: each disk's state now is its base; from here its writes count."""
        cycle = Cycle(armed_at=time.time())
        logged = [d for d in self.disks if d.logged]
        self._entry = self.scope.add("powercut-cycle", disks=[d.top for d in logged])
        for disk in logged:
            dmctl.suspend(disk.top)
        try:
            cycle.base = _host("power-base", logged)
            for disk in logged:
                self._cycle_table(disk)
        finally:
            for disk in logged:
                dmctl.resume(disk.top, cookie=dmctl.NO_AUTOASSEMBLY)
        for disk in logged:
            if disk.write_cache == LYING:
                # Only now: the top took "write back" from the liar as it resumed (the
                # kernel lets a queue say write back only if its table does), and keeps
                # it; from here the liar completes every flush sent to it, undone.
                _set_write_cache(dmctl.info(f"{disk.top}-lie"), "write through")
        self.cycle = cycle
        lying = [d for d in logged if d.write_cache == LYING]
        if lying:
            self._stop.clear()
            self._writeback = threading.Thread(target=self._write_back, args=(lying,),
                                               name="volbench-writeback", daemon=True)
            self._writeback.start()
        return cycle

    def _cycle_table(self, disk: CutDisk) -> None:
        assert disk.log is not None
        base = _made(f"{disk.top}-base", disk.idle_table())
        disk.cycle_devices = [base.name]  # removed at the restore; by name in an undo
        logging = [Target(0, disk.data_sectors, "log-writes",
                          f"{base.devno} {disk.log.devno}")]
        if disk.write_cache != LYING:
            dmctl.load(disk.top, logging)
            return
        lw, lie = f"{disk.top}-lw", f"{disk.top}-lie"
        disk.cycle_devices[:0] = [lie, lw]
        logger = _made(lw, logging)
        liar = _made(lie, _linear(logger.devno, 0, disk.data_sectors))
        dmctl.load(disk.top, _linear(liar.devno, 0, disk.data_sectors))

    def _write_back(self, disks: list[CutDisk]) -> None:
        """A lying disk's only real write-back: a flush of its log-writes device, every
        `writeback_s` seconds from the cycle's start, until the cut."""
        fds = {d.name: os.open(dmctl.info(f"{d.top}-lw").node, os.O_RDONLY) for d in disks}
        period = min(d.writeback_s for d in disks)
        try:
            while not self._stop.wait(period):
                with self._lock:
                    if self._stop.is_set():
                        return
                    for fd in fds.values():
                        os.fsync(fd)
                    if self.cycle is not None:
                        self.cycle.writebacks += 1
        finally:
            for fd in fds.values():
                os.close(fd)

    def cut(self) -> float:
        """Power off: every disk suspended, then failing. Returns the cut's moment (time.time())."""
        with self._lock:
            self._stop.set()
            moment = time.time()
            for disk in self.disks:
                dmctl.suspend(disk.top)
        if self.cycle is not None:
            self.cycle.cut_at = moment
        for disk in self.disks:
            dmctl.load(disk.top, [Target(0, disk.data_sectors, "error", "")])
            dmctl.resume(disk.top, cookie=dmctl.NO_AUTOASSEMBLY)
        if self._writeback is not None:
            self._writeback.join(timeout=30)
        return moment

    def holders(self) -> dict[str, list[str]]:
        """Disks something above still holds open (a mount, an array): must be none
        before the power comes back, or the old stack would live on."""
        held: dict[str, list[str]] = {}
        for disk in self.disks:
            info = dmctl.info(disk.top)
            if info.open_count:
                found = sorted(p.name for p in
                               Path(f"/sys/block/dm-{info.minor}/holders").iterdir())
                held[disk.name] = found or [f"open {info.open_count} times"]
        return held

    def restore(self) -> dict[str, Any]:
        """Power back: each image holds what its disk had made durable, the idle table
        returns. The host's answers per disk are returned (and kept with the cycle)."""
        held = self.holders()
        if held:
            raise FaultError("the stack above the cut disks is still there: " + "; ".join(
                f"{name} held by {', '.join(h)}" for name, h in held.items()))
        for disk in self.disks:
            for name in disk.cycle_devices:  # a log-writes destructor completes its log
                dmctl.remove(name)
            disk.cycle_devices = []
        logged = [d for d in self.disks if d.logged]
        restored = _host("power-restore", logged) if logged else {}
        for disk in self.disks:
            dmctl.load(disk.top, disk.idle_table())
            dmctl.resume(disk.top, cookie=dmctl.NO_AUTOASSEMBLY)
        if self._entry is not None:
            self.scope.forget(self._entry)
            self._entry = None
        if self.cycle is not None:
            self.cycle.restored = restored
        return restored


def _error_if_suspended(names: Sequence[str]) -> None:
    for name in names:
        if dmctl.exists(name) and dmctl.info(name).suspended:
            size = sum(t.length for t in dmctl.status(name, table=True))
            dmctl.load(name, [Target(0, size, "error", "")])
            dmctl.resume(name)


@first_in_cleanup("powercut-cycle")
def _cycle_first(data: Mapping[str, Any]) -> None:
    """A volbench killed in the middle of a cut leaves disks suspended: everything above
    would wait on them for ever, cleanup's umounts too. They fail instead."""
    _error_if_suspended([str(n) for n in data.get("disks", [])])


@undoer("powercut-cycle")
def _undo_cycle(data: Mapping[str, Any]) -> None:
    """A cycle that did not end in a restore: its disks fail rather than hang (the
    stack above is torn down by its own entries; the disks' entries remove the rest)."""
    _error_if_suspended([str(n) for n in data.get("disks", [])])


@undoer("powercut-disk")
def _undo_disk(data: Mapping[str, Any]) -> None:
    """The wrapper and everything under it, top first (a lying disk's cycle devices
    sit between the top and its base)."""
    made = [str(n) for n in data.get("devices", [])]
    _error_if_suspended(made)
    top = made[-1] if made else ""
    cycle = [f"{top}-lie", f"{top}-lw", f"{top}-base"]
    order = [top, *cycle, *reversed(made[:-1])] if top else []
    for name in order:
        if dmctl.exists(name):
            dmctl.remove(name)
