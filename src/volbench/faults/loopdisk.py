"""A host loop disk that vanishes: `pull` / `return` of a `loopdisk` target's disk.

    pull:   LOOP_SET_STATUS64 with lo_offset = the image's size (the disk's capacity: 0)
    return: LOOP_SET_STATUS64 with lo_offset = 0 (the whole image again)

A loop device cannot be taken away while it is open: `losetup -d` only marks it to go
at the last close, and its I/O goes on (measured: docs/faults.md). What the kernel does
to a disk that is removed while open is set its capacity to 0, and that the host can do
to a loop device: a workload then sees what it sees of a pulled lab disk (I/O in flight
fails with EIO, reads return 0 bytes, writes fail). Unlike a lab disk's pull the node
stays, and `return` brings the same disk back under it with its data; for what a kernel
does when a device goes (md degrading, /dev entries going) pull a lab disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import ResourceError
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.block.devices import loop_backing, set_loop_offset
from volbench.system.journal import undoer
from volbench.targets.base import Built

KIND = "fault-loopdisk"


def _offset(device: str, backing: str, offset: int, what: str) -> Command:
    def call() -> str:
        try:
            set_loop_offset(device, backing, offset)
        except ResourceError as exc:
            raise FaultError(str(exc)) from exc
        return what

    return Command(text=f"LOOP_SET_STATUS64 {device} lo_offset={offset}", call=call)


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The whole image back, while the loop device is still this image's (teardown
    may have detached it, and its number may serve another image since)."""
    device, backing = str(data["device"]), str(data["backing"])
    if loop_backing(device) != backing:
        return []
    return [_offset(device, backing, 0, f"{device} has its whole image again")]


@undoer(KIND)
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def pull(fault: FaultSpec, built: Built) -> Action:
    """The target's loop disk left with no capacity until its `return`."""
    image = os.path.realpath(str(built.info.get("image") or "")) if built.info.get("image") \
        else ""
    size = built.info.get("size")
    if not image or not isinstance(size, int) or len(built.devices) != 1:
        raise FaultError(f"target {built.name} is not one loop disk of volbench's own; "
                         "'pull' on the host takes a loopdisk target's disk")
    device = built.devices[0]
    data = {"device": device, "backing": image, "pulled": True}
    step = _offset(device, image, size, f"{device} has 0 bytes left (image {image})")
    may_lose = "the disk was pulled: writes it had not finished are lost"
    return Action("pull", KIND, data, lambda: [step], _undo_commands,
                  facts={"device": device, "image_bytes": size, "how": "capacity 0"},
                  may_lose=may_lose)
