"""The host's half of a lab-disk fault: requests from the guest, run through QMP.

The guest cannot change a lab disk's throttle or pull it out (QEMU owns both on the
host), so its fault action (faults/labdisk.py) writes `KEY.req` into OUTDIR/.lab/faults,
a folder both sides see, and waits for `KEY.ack`. While the VM runs, a thread here polls
that folder every 50 ms, runs the request as QMP commands and writes the answer: what
QEMU was asked and what it replied, or the error. Requests name disks of this lab only;
nothing else can be asked.

    slow    block_set_io_throttle (the device labdev<i>'s virtio backend): the class's
            caps cut to `percent`
    pull    device_del labdev<i>, then wait until QEMU has deleted it (the guest let go)
    return  a pulled disk plugged back (blockdev-add, device_add at its old slot, same
            serial), then block_set_io_throttle with the class's caps and bursts
    power-base, power-restore
            a power cut's disks (lab/cutdisks.py): no QMP, the images themselves
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from volbench.config.lab import DiskClass, LabSpec
from volbench.lab import cutdisks, diskopts
from volbench.lab.errors import LabError
from volbench.lab.qmp import Qmp

POLL_S = 0.05
# How long the host waits for the guest to let go of a pulled disk (ACPI hotplug: the
# guest's kernel ejects the device, then QEMU deletes it); a loaded emulated guest is slow.
UNPLUG_TIMEOUT_S = 60.0
UNPLUG_POLL_S = 0.1
ACTIONS = ("slow", "pull", "return")
# QMP's block_set_io_throttle names for each cap (all six are required by QEMU).
QMP_NAMES = {"iops": "iops", "read_iops": "iops_rd", "write_iops": "iops_wr",
             "bps": "bps", "read_bps": "bps_rd", "write_bps": "bps_wr"}


class Monitor(Protocol):
    """What the bridge needs of a QMP connection (lab.qmp.Qmp; a fake in unit tests)."""

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any: ...


def drive_id(index: int) -> str:
    """The -drive id of the lab's disk number `index` (diskopts names them)."""
    return diskopts.drive_id(index)


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


def _disk(spec: LabSpec, request: Mapping[str, Any]) -> int:
    names = [d.name for d in spec.disks]
    disk = str(request.get("disk", ""))
    if disk not in names:
        raise LabError(f"no lab disk {disk!r} (the lab has {', '.join(names)})")
    if request.get("action") not in ACTIONS:
        raise LabError(f"unknown lab-disk action {request.get('action')!r} "
                       f"({', '.join(ACTIONS)})")
    return names.index(disk)


def answer(spec: LabSpec, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The QMP command a request asks for first: (command, arguments); LabError for a
    request that names no disk of this lab or an action there is none of."""
    index = _disk(spec, request)
    cls = spec.disk_class(spec.disks[index])
    action = request.get("action")
    if action == "pull":
        return "device_del", {"id": diskopts.device_id(index)}
    if action == "slow":
        percent = int(request.get("percent", 10))
        if not 1 <= percent <= 100:
            raise LabError(f"percent {percent} is not between 1 and 100")
        caps = throttle(cls, percent)
    else:
        caps = throttle(cls)
    return "block_set_io_throttle", {"id": diskopts.backend_path(index),
                                     "group": drive_id(index), **caps}


def serve(qmp: Monitor, spec: LabSpec, images: Sequence[Path],
          request: Mapping[str, Any], unplug_timeout: float = UNPLUG_TIMEOUT_S
          ) -> dict[str, Any]:
    """Carry out one request on the VM behind `qmp`; the answer lists every QMP step
    (`steps`), and the throttle set last (`command`, `arguments`, `returned`)."""
    command, arguments = answer(spec, request)
    index = _disk(spec, request)
    steps: list[dict[str, Any]] = []

    def run(name: str, args: dict[str, Any] | None = None) -> Any:
        returned = qmp.execute(name, args)
        steps.append({"command": name, "arguments": args or {}, "returned": returned})
        return returned

    if request["action"] == "pull":
        gone = _pull(qmp, run, index, unplug_timeout)
        return {"command": command, "arguments": arguments, "steps": steps,
                "gone_after_s": round(gone, 3)}
    if request["action"] == "return" and not _present(qmp, index):
        _plug(qmp, run, spec, images, index)
    returned = run(command, arguments)
    return {"command": command, "arguments": arguments, "returned": returned, "steps": steps,
            "caps_now": _caps_now(qmp, index)}


def _caps_now(qmp: Monitor, index: int) -> dict[str, Any]:
    """The disk's throttle as QEMU reports it after the change (query-block), so the
    record shows the caps hold, on a disk put back too ({} when QEMU lists no such disk)."""
    for block in qmp.execute("query-block"):
        if block.get("qdev") == diskopts.backend_path(index):
            inserted = block.get("inserted") or {}
            return {k: v for k, v in inserted.items()
                    if k.split("_max")[0] in QMP_NAMES.values() or k == "group"}
    return {}


def _present(qmp: Monitor, index: int) -> bool:
    """Is the disk's device in the VM (QEMU's /machine/peripheral holds it by its id)?"""
    children = qmp.execute("qom-list", {"path": "/machine/peripheral"})
    return any(c.get("name") == diskopts.device_id(index) for c in children)


def _nodes(qmp: Monitor) -> set[str]:
    return {str(n.get("node-name")) for n in qmp.execute("query-named-block-nodes")}


def _pull(qmp: Monitor, run: Any, index: int, timeout: float) -> float:
    """device_del, then wait until QEMU deleted the device: seconds it took."""
    if not _present(qmp, index):
        raise LabError(f"lab disk {diskopts.device_id(index)} is not plugged in (pulled "
                       "already?)")
    started = time.monotonic()
    run("device_del", {"id": diskopts.device_id(index)})
    while _present(qmp, index):
        if time.monotonic() - started > timeout:
            raise LabError(f"the guest did not let go of the disk within {timeout:g} s; "
                           "QEMU's unplug stays pending (the disk goes when the guest "
                           "ejects it; a return then plugs it back)")
        time.sleep(UNPLUG_POLL_S)
    gone = time.monotonic() - started
    # The node of an earlier return stays open without its device: closed, so the next
    # return can open the image again (a -drive's own node went with its device).
    if diskopts.node_id(index) in _nodes(qmp):
        run("blockdev-del", {"node-name": diskopts.node_id(index)})
    return gone


def _plug(qmp: Monitor, run: Any, spec: LabSpec, images: Sequence[Path],
          index: int) -> None:
    """The pulled disk back at its slot with its serial, on its own image."""
    legacy = {str(b.get("device")) for b in qmp.execute("query-block")}
    if drive_id(index) in legacy:  # the -drive outlived its device: attach it again
        backend = drive_id(index)
    else:
        if index >= len(images):
            raise LabError(f"the host does not know lab disk {index}'s image")
        cls = spec.disk_class(spec.disks[index])
        if diskopts.node_id(index) not in _nodes(qmp):
            run("blockdev-add", diskopts.blockdev_args(cls, index, images[index]))
        backend = diskopts.node_id(index)
    run("device_add", diskopts.device_props(spec, index, backend))


class FaultBridge:
    """Serves the guest's lab-disk requests while the VM runs (start/stop around it)."""

    def __init__(self, spec: LabSpec, channel: Path, socket_path: Path,
                 images: Sequence[Path] = (),
                 connect: Callable[[Path], AbstractContextManager[Monitor]] = Qmp) -> None:
        self.spec, self.channel, self.socket_path = spec, channel, socket_path
        self.images = tuple(images)
        self.connect = connect  # a fake VM in unit tests
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
        self.thread.join(timeout=5.0 + UNPLUG_TIMEOUT_S)

    def _serve(self) -> None:
        while not self.done.wait(POLL_S):
            for request in sorted(self.channel.glob("*.req")):
                self._handle(request)

    def _handle(self, path: Path) -> None:
        reply: dict[str, Any]
        try:
            request = json.loads(path.read_text())
            if request.get("action") in cutdisks.ACTIONS:
                reply = cutdisks.serve(self.spec, self.images, request)
            else:
                with self.connect(self.socket_path) as qmp:
                    reply = serve(qmp, self.spec, self.images, request)
        except (LabError, OSError, ValueError) as exc:
            reply = {"error": str(exc)}
        path.unlink(missing_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(reply))
        tmp.rename(path.with_suffix(".ack"))
