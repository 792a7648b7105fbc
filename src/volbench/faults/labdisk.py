"""A lab disk that slows down, asked of QEMU from inside the guest (docs/faults.md).

    slow:   block_set_io_throttle on the disk's drive: every cap of its class cut to
            `percent` (10 % unless said), its bursts off
    return: block_set_io_throttle back to the class's caps and bursts

The disk is throttled by QEMU on the host (lab/vm.py), so the guest cannot change it
itself: the action writes a request into the channel folder the host shares with the
guest (VOLBENCH_LAB_CHANNEL, in OUTDIR/.lab) and waits for the host's answer
(lab/faultbridge.py runs the QMP command). The request/answer files are one JSON
object each; the answer says what QEMU was asked and what it replied.

The request is a step of the action like any command (journalled, timed, recorded with
its answer), made in this process: starting Python in the emulated guest took 41 s.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.journal import undoer

CHANNEL_ENV = "VOLBENCH_LAB_CHANNEL"
BY_ID = "/dev/disk/by-id/virtio-"
DEFAULT_PERCENT = 10
# Seconds the guest waits for the host's answer (a QMP command takes milliseconds; the
# host polls the folder every 50 ms; 9p adds little).
ANSWER_TIMEOUT = 30.0


def is_lab_disk(device: str | None) -> bool:
    """Is `device` a lab disk's by-id path (one QEMU throttles)?"""
    return bool(device and device.startswith(BY_ID))


def disk_name(device: str) -> str:
    """The lab disk's name (its virtio serial) from its by-id path."""
    return device[len(BY_ID):]


def _request(action: str, name: str, percent: int | None = None) -> Command:
    """The step that asks the host (in this process: a Python start in the emulated
    guest took 41 s, longer than many faults last)."""
    request: dict[str, Any] = {"action": action, "disk": name}
    if percent is not None:
        request["percent"] = percent

    def call() -> str:
        return json.dumps(ask(Path(os.environ[CHANNEL_ENV]), request))

    words = f" {percent} %" if percent is not None else ""
    return Command(text=f"qmp {action} {name}{words}", call=call)


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    # Outside the lab (cleanup after the VM is gone) there is nothing to undo: the
    # throttle lived in the QEMU process, which ended with the VM.
    if not os.environ.get(CHANNEL_ENV):
        return []
    return [_request("return", str(data["disk"]))]


@undoer("fault-labdisk")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def slow(fault: FaultSpec) -> Action:
    """The lab disk `fault.device` names, cut to `percent` of its class in QEMU."""
    if not os.environ.get(CHANNEL_ENV):
        raise FaultError(f"{fault.device}: slowing a lab disk needs the lab (volbench lab "
                         "run); on the host, slow a target with limits: instead")
    name = disk_name(str(fault.device))
    percent = int(fault.options.get("percent", DEFAULT_PERCENT))
    return Action("slow", "fault-labdisk", {"disk": name},
                  lambda: [_request("slow", name, percent)], _undo_commands,
                  facts={"percent": percent, "disk": name, "via": "qmp"})


# -- the request, as the guest sends it ----------------------------------------------------


def ask(channel: Path, request: Mapping[str, Any], timeout: float = ANSWER_TIMEOUT
        ) -> dict[str, Any]:
    """Write `request` into the channel and wait for the host's answer (FaultError when
    none comes in `timeout` s, or when the host says it failed)."""
    key = uuid.uuid4().hex
    tmp = channel / f".{key}.tmp"
    tmp.write_text(json.dumps(dict(request)))
    tmp.rename(channel / f"{key}.req")  # whole or absent: the host never reads half
    answer = channel / f"{key}.ack"
    deadline = time.monotonic() + timeout
    while not answer.exists():
        if time.monotonic() > deadline:
            raise FaultError(f"no answer from the lab's host to {request} within "
                             f"{timeout:g} s (is the host's fault bridge running?)")
        time.sleep(0.02)
    reply = dict(json.loads(answer.read_text()))
    answer.unlink(missing_ok=True)
    if reply.get("error"):
        raise FaultError(f"the lab's host could not {request.get('action')} disk "
                         f"{request.get('disk')}: {reply['error']}")
    return reply
