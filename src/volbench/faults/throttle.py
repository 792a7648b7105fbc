"""A disk that slows down: `slow` / `return` through the target's blkio throttle.

    slow:   echo "MAJ:MIN N" > CGROUP/blkio.throttle.{read,write}_{iops,bps}_device
            (N = percent of the disk class's cap, 10 % unless `percent:` says)
    return: the class's own caps written back

The target needs `limits:` (its disk class): the cap is what is cut. This acts only on
the cgroup volbench made for the target's workload, on the host and in the lab alike;
no disk outside the experiment is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.block.devices import device_number
from volbench.system.journal import undoer
from volbench.targets.base import Built

DEFAULT_PERCENT = 10


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The caps as they were, while the cgroup exists (teardown may have removed it)."""
    return [Command(path=path, text=text) for path, text in data.get("writes", [])
            if Path(path).exists()]


@undoer("fault-throttle")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def slow(fault: FaultSpec, built: Built, limits: list[tuple[str, int]]) -> Action:
    """Every cap of the target's class cut to `percent` (at least 1 a second)."""
    if built.cgroup is None or not limits:
        raise FaultError(f"target {built.name} has no throttle to slow; give it limits: "
                         "(a disk class), e.g. {read_iops: 500, write_iops: 500}")
    percent = fault.options.get("percent", DEFAULT_PERCENT)
    old: list[list[str]] = []
    new: list[Command] = []
    for device in built.devices:
        number = device_number(device)
        for knob, value in limits:
            path = str(built.cgroup / f"blkio.throttle.{knob}_device")
            old.append([path, f"{number} {value}"])
            new.append(Command(path=path, text=f"{number} {max(1, value * percent // 100)}"))
    return Action("slow", "fault-throttle", {"writes": old}, lambda: list(new), _undo_commands,
                  facts={"percent": percent, "caps": dict(limits)})
