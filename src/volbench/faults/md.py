"""md RAID member faults: `fail` (mdadm --fail, --remove) and `restore` (--add: rebuild).

    fail:    mdadm --fail ARRAY MEMBER ; mdadm --remove ARRAY MEMBER
    restore: mdadm --add ARRAY MEMBER          (only if MEMBER is not in ARRAY already)
    speed:   echo N > /proc/sys/dev/raid/speed_limit_min (and _max), old values put back

The rebuild's progress is read from /proc/mdstat each second while it runs; md's speed
limits are recorded with the event (and set when the fault gives them), with what the
rebuild's length can be predicted from: the member's size (md rebuilds all of it unless
the array has a write-intent bitmap), the bitmap, and the lab disks' byte caps.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.journal import undoer
from volbench.targets.base import Built

MDSTAT = Path("/proc/mdstat")
SPEED = Path("/proc/sys/dev/raid")
SYSFS_BLOCK = Path("/sys/class/block")
LIMITS = ("speed_limit_min", "speed_limit_max")
# "[==>..................]  recovery = 12.6% (132096/1047552) finish=0.7min speed=21018K/sec"
_PROGRESS = re.compile(r"(?P<what>recovery|resync|reshape)\s*=\s*(?P<pct>[\d.]+)%\s*"
                       r"\((?P<done>\d+)/(?P<total>\d+)\)(?:.*?speed=(?P<speed>\d+)K/sec)?")
_ARRAY = re.compile(r"^(?P<name>md\w+)\s*:")


def rebuild_progress(mdstat: str, array: str) -> dict[str, Any] | None:
    """The array's running rebuild in /proc/mdstat text: fraction done, KiB done and in
    all, speed (KiB/s); None when no rebuild runs (finished, or never started)."""
    current = None
    for line in mdstat.splitlines():
        m = _ARRAY.match(line)
        if m:
            current = m["name"]
            continue
        p = _PROGRESS.search(line)
        if p and current == array:
            total = int(p["total"])
            return {"what": p["what"], "fraction": int(p["done"]) / total if total else 0.0,
                    "done_kib": int(p["done"]), "total_kib": int(p["total"]),
                    "speed_kib_s": int(p["speed"]) if p["speed"] else None}
    return None


def speed_limits() -> dict[str, int]:
    """md's rebuild throttle now (KiB/s); empty where md is not loaded."""
    out = {}
    for name in LIMITS:
        try:
            out[name] = int((SPEED / name).read_text())
        except (OSError, ValueError):
            continue
    return out


def array_facts(array: str, sysfs: Path = SYSFS_BLOCK) -> dict[str, Any]:
    """The member size md rebuilds (`component_size`, KiB) and the array's bitmap
    (`none`, or where it lives: a bitmap limits a re-add to the dirty regions); empty
    where sysfs does not say."""
    md_dir = sysfs / Path(os.path.realpath(array)).name / "md"
    out: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        out["member_kib"] = int((md_dir / "component_size").read_text())
    with contextlib.suppress(OSError):
        out["bitmap"] = (md_dir / "bitmap" / "location").read_text().strip()
    return out


def byte_cap(disks: Sequence[Mapping[str, int]]) -> int | None:
    """The lowest byte cap (B/s) of the disks a rebuild reads and writes: each disk's
    `bps` (reads and writes together), `read_bps` and `write_bps`; None without one."""
    found = [int(c[k]) for c in disks for k in ("bps", "read_bps", "write_bps") if c.get(k)]
    return min(found) if found else None


def _member_caps(built: Built, caps: Mapping[str, Mapping[str, int]]) -> list[Mapping[str, int]]:
    listed = [str(d.get("listed") or d.get("device")) for d in built.info.get("disks", [])]
    return [caps[name] for name in listed if name in caps]


def _member(fault: FaultSpec, built: Built) -> tuple[str, str]:
    """(array node, member node) for the listed device the fault names."""
    array = str(built.info.get("device") or built.block_device or "")
    for disk in built.info.get("disks", []):
        if fault.device in (disk.get("listed"), disk.get("device")):
            return array, str(disk["device"])
    members = [str(d.get("listed") or d.get("device")) for d in built.info.get("disks", [])]
    raise FaultError(f"{fault.device} is not a member of md target {built.name}; "
                     f"its members: {', '.join(members)}")


def _in_array(array: str, member: str) -> bool:
    name = Path(os.path.realpath(member)).name
    holders = Path(f"/sys/class/block/{Path(os.path.realpath(array)).name}/md")
    return (holders / f"dev-{name}").exists()


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """Put the member back, if the array still runs and lacks it."""
    array, member = str(data["array"]), str(data["member"])
    if Path(array).exists() and Path(member).exists() and not _in_array(array, member):
        return [Command(("mdadm", "--add", array, member))]
    return []


def _cleanup_commands(data: Mapping[str, Any]) -> list[Command]:
    """The member put back, then udev waited for (in `volbench cleanup` the array is
    stopped next: the "change" event of the member mdadm wrote must find it in the
    running array, where udev's `mdadm --incremental` does nothing)."""
    commands = _undo_commands(data)
    if commands and shutil.which("udevadm"):
        commands.append(Command(("udevadm", "settle", "--timeout=30")))
    return commands


@undoer("fault-md-member")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_cleanup_commands, data)


def _limits_back(data: Mapping[str, Any]) -> list[Command]:
    return [Command(path=str(SPEED / k), text=str(v)) for k, v in data.get("limits", {}).items()]


@undoer("fault-md-speed")
def _undo_speed(data: Mapping[str, Any]) -> None:
    """md's speed limits as they were before the run set them (they hold until its end:
    the rebuild after `restore` runs under them)."""
    undo_now(_limits_back, data)


def _sampler(array: str) -> Any:
    name = Path(os.path.realpath(array)).name

    def sample() -> dict[str, Any]:
        try:
            text = MDSTAT.read_text()
        except OSError:
            return {}
        found = rebuild_progress(text, name)
        return {"rebuild": found} if found else {"rebuild": None}

    return sample


def fail(fault: FaultSpec, built: Built,
         caps: Mapping[str, Mapping[str, int]] | None = None) -> Action:
    """mdadm --fail and --remove of the member; undone by --add (the rebuild starts).
    `caps`: the lab disks' caps by device; the facts then hold the members' byte cap
    (`cap_bps`), beside the member's size, the bitmap and md's speed limits."""
    array, member = _member(fault, built)
    old = speed_limits()
    wanted = {k: v for k, v in fault.options.items() if k in LIMITS}

    # max first when raising, min first when lowering: md refuses min > max.
    order = sorted(wanted.items(), key=lambda kv: (kv[0] == "speed_limit_min") ==
                   (kv[1] > old.get(kv[0], 0)))
    sets = [Command(path=str(SPEED / k), text=str(v)) for k, v in order]

    def apply() -> list[Command]:
        return [*sets, Command(("mdadm", "--fail", array, member)),
                Command(("mdadm", "--remove", array, member))]

    keep = [("fault-md-speed", {"limits": {k: old[k] for k in wanted if k in old}})] \
        if wanted else []
    level = str(built.info.get("level") or "")
    facts = {"speed_limits": old, "set": wanted, "level": level, **array_facts(array),
             "cap_bps": byte_cap(_member_caps(built, caps or {}))}
    return Action("fail", "fault-md-member", {"array": array, "member": member}, apply,
                  _undo_commands, facts=facts,
                  keep=keep, may_lose=may_lose(level))


def may_lose(level: str) -> str:
    """Why a member's loss may cost data at this md level ('' for a level with a copy or
    parity of every block)."""
    if level.replace("raid", "") in ("1", "10", "4", "5", "6"):
        return ""
    return f"md {level or 'array'} keeps no copy of a member's blocks"


def restore_sampler(built: Built) -> Any:
    """The rebuild's progress sampler for the phase after `restore`."""
    return _sampler(str(built.info.get("device") or built.block_device or ""))
