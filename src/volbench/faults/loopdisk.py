"""A host loop disk that vanishes: `pull` / `return` of a `loopdisk` target's disk.

    pull:   BLKROSET 1 (every write refused from now on), wait until the requests
            already queued are done, LOOP_SET_STATUS64 with lo_offset = the image's size
            (the disk's capacity: 0), check that the image kept its size
    return: LOOP_SET_STATUS64 with lo_offset = 0 (the whole image again), BLKROSET 0

A loop device cannot be taken away while it is open: `losetup -d` only marks it to go
at the last close, and its I/O goes on (measured: docs/faults.md). What the kernel does
to a disk that is removed while open is set its capacity to 0, and that the host can do
to a loop device: a workload then sees what it sees of a pulled lab disk (reads return 0
bytes, writes fail). Unlike a lab disk's pull the node stays, and `return` brings the
same disk back under it with its data; for what a kernel does when a device goes (md
degrading, /dev entries going) pull a lab disk.

Why the read-only step first: the offset alone let writes through. The kernel freezes
the loop's queue to change its status; bios submitted meanwhile had passed the size
check against the old capacity (and a capacity of 0 skips that check), so after the
change they went to the image at the new offset, past its end: 1.7-20 MB of writes
"succeeded" there and the disk came back that much larger (issue 34; reproduced by
tests/system/test_faults_pull_host.py, 15.8 MB in 1 s of 8 writers). Marked read-only,
the block layer refuses a write at submission, before the queue; the writes already
queued finish where they belong (a real disk finishes what it took before it went),
and only then does the offset move. A process writing the device sees EPERM, a
filesystem on it EIO; reads return 0 bytes. If a write still slipped past (it would
have to be between the read-only check and the queue at that very moment), the image
is cut back to its size and the event says how much was cut.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import ResourceError
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.block.devices import (
    in_flight,
    loop_backing,
    set_loop_offset,
    set_read_only,
)
from volbench.system.journal import undoer
from volbench.targets.base import Built

KIND = "fault-loopdisk"
# How long the pull waits for the requests queued before it to finish.
DRAIN_S = 5.0


def _step(text: str, what: str, act: Callable[[], str | None]) -> Command:
    def call() -> str:
        try:
            said = act()
        except (ResourceError, OSError) as exc:
            raise FaultError(str(exc)) from exc
        return said or what

    return Command(text=text, call=call)


def _drain(device: str) -> str:
    """Until the requests queued before the read-only mark are done (at most DRAIN_S)."""
    began = time.monotonic()
    while in_flight(device) and time.monotonic() - began < DRAIN_S:
        time.sleep(0.01)
    left = in_flight(device)
    waited = time.monotonic() - began
    return (f"{left} request(s) still queued after {waited:.2f} s" if left
            else f"queued requests done after {waited:.3f} s")


def _kept_size(image: str, size: int) -> str:
    """The image cut back to `size` if a write slipped past its end, and what was cut."""
    now = os.stat(image).st_size
    if now <= size:
        return f"{image} kept its size ({size} bytes)"
    os.truncate(image, size)
    return f"{now - size} bytes written past the end of {image} were cut off"


def _apply(device: str, backing: str, size: int) -> list[Command]:
    return [
        _step(f"BLKROSET {device} 1", f"{device} refuses writes",
              lambda: set_read_only(device, backing, True)),
        _step(f"wait for {device}'s queued requests", "", lambda: _drain(device)),
        _step(f"LOOP_SET_STATUS64 {device} lo_offset={size}",
              f"{device} has 0 bytes left (image {backing})",
              lambda: set_loop_offset(device, backing, size)),
        _step(f"check the size of {backing}", "", lambda: _kept_size(backing, size)),
    ]


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The whole image back, writable, while the loop device is still this image's
    (teardown may have detached it, and its number may serve another image since)."""
    device, backing = str(data["device"]), str(data["backing"])
    if loop_backing(device) != backing:
        return []
    steps = [_step(f"LOOP_SET_STATUS64 {device} lo_offset=0",
                   f"{device} has its whole image again",
                   lambda: set_loop_offset(device, backing, 0)),
             _step(f"BLKROSET {device} 0", f"{device} takes writes again",
                   lambda: set_read_only(device, backing, False))]
    if isinstance(data.get("size"), int):
        size = int(data["size"])
        steps.append(_step(f"check the size of {backing}", "",
                           lambda: _kept_size(backing, size)))
    return steps


@undoer(KIND)
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def pull(fault: FaultSpec, built: Built) -> Action:
    """The target's loop disk left with no capacity, refusing writes, until `return`."""
    image = os.path.realpath(str(built.info.get("image") or "")) if built.info.get("image") \
        else ""
    size = built.info.get("size")
    if not image or not isinstance(size, int) or len(built.devices) != 1:
        raise FaultError(f"target {built.name} is not one loop disk of volbench's own; "
                         "'pull' on the host takes a loopdisk target's disk")
    device = built.devices[0]
    data = {"device": device, "backing": image, "pulled": True, "size": size}
    may_lose = "the disk was pulled: writes it had not finished are lost"
    return Action("pull", KIND, data, lambda: _apply(device, image, size), _undo_commands,
                  facts={"device": device, "image_bytes": size,
                         "how": "read-only, then capacity 0"},
                  may_lose=may_lose)
