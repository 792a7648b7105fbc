"""The host's half of a lab-disk fault: requests from the guest, run through QMP.

The guest cannot change a lab disk's throttle (QEMU enforces it on the host), so its
fault action (faults/labdisk.py) writes `KEY.req` into OUTDIR/.lab/faults, a folder both
sides see, and waits for `KEY.ack`. While the VM runs, a thread here polls that folder
every 50 ms, runs the request as QMP commands and writes the answer: what QEMU was
asked and what it replied, or the error. Requests name disks of this lab only; nothing
else can be asked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.lab import DiskClass, LabSpec
from volbench.lab.errors import LabError
from volbench.lab.qmp import Qmp

POLL_S = 0.05
# QMP's block_set_io_throttle names for each cap (all six are required by QEMU).
QMP_NAMES = {"iops": "iops", "read_iops": "iops_rd", "write_iops": "iops_wr",
             "bps": "bps", "read_bps": "bps_rd", "write_bps": "bps_wr"}


def drive_id(index: int) -> str:
    """The -drive id of the lab's disk number `index` (vm.qemu_options names them)."""
    return f"labdisk{index}"


def throttle(cls: DiskClass, percent: int | None = None) -> dict[str, int]:
    """block_set_io_throttle's caps for a disk of class `cls`: the class as it is
    (bursts included), or every cap cut to `percent` (at least 1, no bursts)."""
    out = {name: 0 for name in QMP_NAMES.values()}
    for key, name in QMP_NAMES.items():
        value = getattr(cls, key)
        if value is not None:
            out[name] = value if percent is None else max(1, value * percent // 100)
    if percent is None:
        for key, rate in cls.bursts.items():
            out[f"{QMP_NAMES[key]}_max"] = rate
            out[f"{QMP_NAMES[key]}_max_length"] = cls.burst_seconds or 1
    return out


def answer(spec: LabSpec, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The QMP command a request asks for: (command, arguments); LabError for a request
    that names no disk of this lab or an action there is none of."""
    names = [d.name for d in spec.disks]
    disk = str(request.get("disk", ""))
    if disk not in names:
        raise LabError(f"no lab disk {disk!r} (the lab has {', '.join(names)})")
    cls = spec.disk_class(spec.disk(disk))
    action = request.get("action")
    if action == "slow":
        percent = int(request.get("percent", 10))
        if not 1 <= percent <= 100:
            raise LabError(f"percent {percent} is not between 1 and 100")
        caps = throttle(cls, percent)
    elif action == "return":
        caps = throttle(cls)
    else:
        raise LabError(f"unknown lab-disk action {action!r} (slow, return)")
    return "block_set_io_throttle", {"device": drive_id(names.index(disk)), **caps}


class FaultBridge:
    """Serves the guest's lab-disk requests while the VM runs (start/stop around it)."""

    def __init__(self, spec: LabSpec, channel: Path, socket_path: Path) -> None:
        self.spec, self.channel, self.socket_path = spec, channel, socket_path
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="lab-faults", daemon=True)

    def start(self) -> FaultBridge:
        self.channel.mkdir(parents=True, exist_ok=True)
        for old in self.channel.glob("*"):
            old.unlink(missing_ok=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=5.0)

    def _serve(self) -> None:
        while not self.done.wait(POLL_S):
            for request in sorted(self.channel.glob("*.req")):
                self._handle(request)

    def _handle(self, path: Path) -> None:
        reply: dict[str, Any]
        try:
            request = json.loads(path.read_text())
            command, arguments = answer(self.spec, request)
            with Qmp(self.socket_path) as qmp:
                returned = qmp.execute(command, arguments)
            reply = {"command": command, "arguments": arguments, "returned": returned}
        except (LabError, OSError, ValueError) as exc:
            reply = {"error": str(exc)}
        path.unlink(missing_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(reply))
        tmp.rename(path.with_suffix(".ack"))
