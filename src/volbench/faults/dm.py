"""device-mapper faults on an LVM target's logical volume: `delay`, `errors`, `heal`.

An LVM linear LV on one disk is a one-line dm table (`0 LEN linear MAJ:MIN OFFSET`); a
fault swaps that table for one over the same blocks through another dm target, and
`heal` loads the LV's own table back:

    delay:  dmsetup suspend LV; dmsetup load LV --table '0 LEN delay MAJ:MIN OFFSET MS';
            dmsetup resume LV            (dm-delay: every I/O held MS ms before it goes on)
    errors: the same with '0 LEN flakey MAJ:MIN OFFSET 0 1'
                                         (dm-flakey up 0 s, down 1 s: down all the time,
                                          every read and write fails with EIO)
    heal:   dmsetup suspend LV; dmsetup load LV --table '<its own table>'; dmsetup resume LV

The LV keeps its name, its device node and whatever holds it open (a mounted filesystem,
fio): only the path its I/O takes changes. A span over several disks or a striped or thin
LV has other tables and is refused. The undo (normal end, teardown, `volbench cleanup`)
loads the recorded table when the LV has another one now, and always resumes the LV: a
load that failed after the suspend must not leave the LV suspended with I/O waiting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import VolbenchError
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system import proc
from volbench.system.journal import undoer
from volbench.targets.base import Built

DEFAULT_DELAY_MS = 100
MODULES = {"delay": "dm-delay", "errors": "dm-flakey"}
TIMEOUT = 60.0


def dm_name(device: str) -> str:
    """The dm name of a device node (/dev/VG/LV -> VG-LV), from sysfs."""
    node = Path(os.path.realpath(device)).name
    try:
        return (Path("/sys/class/block") / node / "dm" / "name").read_text().strip()
    except OSError as exc:
        raise FaultError(f"{device} is not a device-mapper device ({exc.strerror}); delay and "
                         "errors act on an lvm target's LV") from exc


def table(name: str) -> str:
    """The dm table loaded for `name` now (dmsetup table)."""
    return proc.run(("dmsetup", "table", name), timeout=TIMEOUT).stdout.strip()


def faulty_table(own: str, action: str, delay_ms: int = DEFAULT_DELAY_MS) -> str:
    """The table that puts `action` on the same blocks as `own`, a one-line linear table
    (FaultError naming what the LV is instead)."""
    lines = [line.split() for line in own.splitlines() if line.strip()]
    if len(lines) != 1 or len(lines[0]) != 5 or lines[0][2] != "linear":
        kinds = sorted({line[2] for line in lines if len(line) > 2})
        raise FaultError(f"delay and errors need an LV that is one linear stretch of one disk "
                         f"(an lvm target with layout linear over one device); this LV's "
                         f"table has {len(lines)} line(s) of {', '.join(kinds) or 'nothing'}")
    start, length, _, device, offset = lines[0]
    if action == "delay":
        return f"{start} {length} delay {device} {offset} {delay_ms}"
    return f"{start} {length} flakey {device} {offset} 0 1"


def _swap(name: str, new: str) -> list[Command]:
    # --noudevsync: the node exists already, and waiting for udev's acknowledgement made
    # the three steps take 6-12 s in the loaded lab VM (the fault came that much late).
    return [Command(("dmsetup", "suspend", "--noudevsync", name)),
            Command(("dmsetup", "load", name, "--table", new)),
            Command(("dmsetup", "resume", "--noudevsync", name))]


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The LV's own table back when another is loaded, and the LV resumed in any case."""
    name, own = str(data["name"]), str(data["table"])
    if not (Path("/dev/mapper") / name).exists():
        return []  # the LV is gone already (torn down): nothing of the fault is left
    try:
        now = table(name)
    except VolbenchError:
        now = ""
    if now == own:
        return [Command(("dmsetup", "resume", "--noudevsync", name))]
    return _swap(name, own)


@undoer("fault-dm-table")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def start(fault: FaultSpec, built: Built) -> Action:
    """`delay` or `errors` on the target's LV: its table swapped; undone by loading it
    back (`heal`, `for:`, teardown or cleanup)."""
    device = str(built.info.get("device") or built.block_device or "")
    if built.type != "lvm" or not device:
        raise FaultError(f"target {built.name} is not an lvm target; delay and errors act on "
                         "an LV (type: lvm, layout: linear, one device)")
    name = dm_name(device)
    own = table(name)
    ms = int(fault.options.get("delay_ms", DEFAULT_DELAY_MS))
    new = faulty_table(own, fault.action, ms)

    def apply() -> list[Command]:
        return [Command(("modprobe", MODULES[fault.action])), *_swap(name, new)]

    facts: dict[str, Any] = {"dm_name": name, "table": own, "fault_table": new}
    if fault.action == "delay":
        facts["delay_ms"] = ms
    return Action(fault.action, "fault-dm-table", {"name": name, "table": own}, apply,
                  _undo_commands, facts=facts)
