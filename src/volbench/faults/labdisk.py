"""A lab disk that slows down or vanishes, asked of QEMU from inside the guest
(docs/faults.md).

    slow:   block_set_io_throttle on the disk's device: every cap of its class cut to
            `percent` (10 % unless said), its bursts off
    pull:   device_del of the disk's virtio device (the guest's kernel lets go of it:
            /dev/vdX and /dev/disk/by-id/virtio-NAME go); the action then waits until
            the by-id link is gone
    return: a pulled disk plugged back (same image, slot and serial: the by-id link comes
            back), and the class's caps and bursts set again; the action waits for the link

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
import re
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
# Where udev keeps the by-id links a pull and a return wait for.
LINKS = Path("/dev/disk/by-id")
DEFAULT_PERCENT = 10
# Seconds the guest waits for the host's answer (a QMP command takes milliseconds; the
# host polls the folder every 50 ms; 9p adds little).
ANSWER_TIMEOUT = 30.0
# A pull or return waits for the guest's kernel (ACPI hotplug) and udev: the host gives
# the unplug 60 s (lab/faultbridge.py), and the link must follow within LINK_TIMEOUT.
PLUG_ANSWER_TIMEOUT = 90.0
LINK_TIMEOUT = 60.0
LINK_POLL_S = 0.05
# After an md member's pull: how long to watch /proc/mdstat for md to notice (md learns
# of a vanished member from its next failed I/O, or from udev's `mdadm -If`).
MDSTAT = Path("/proc/mdstat")
MD_NOTICE_TIMEOUT = 10.0
# "[2/1]": an array with fewer members working than it has, or a member marked (F).
_DEGRADED = re.compile(r"\[(\d+)/(\d+)\]|\(F\)")


def is_lab_disk(device: str | None) -> bool:
    """Is `device` a lab disk's by-id path (one QEMU throttles)?"""
    return bool(device and device.startswith(BY_ID))


def disk_name(device: str) -> str:
    """The lab disk's name (its virtio serial) from its by-id path."""
    return device[len(BY_ID):]


def _request(action: str, name: str, percent: int | None = None,
             timeout: float = ANSWER_TIMEOUT) -> Command:
    """The step that asks the host (in this process: a Python start in the emulated
    guest took 41 s, longer than many faults last)."""
    request: dict[str, Any] = {"action": action, "disk": name}
    if percent is not None:
        request["percent"] = percent

    def call() -> str:
        return json.dumps(ask(Path(os.environ[CHANNEL_ENV]), request, timeout))

    words = f" {percent} %" if percent is not None else ""
    return Command(text=f"qmp {action} {name}{words}", call=call)


def _wait_link(name: str, present: bool, timeout: float = LINK_TIMEOUT) -> Command:
    """The step that waits until the disk's by-id link is there (`present`) or gone:
    udev's part of a pull or return, timed (its output says after how long)."""
    link = LINKS / f"virtio-{name}"
    state = "back" if present else "gone"

    def call() -> str:
        started = time.monotonic()
        while link.exists() != present:
            if time.monotonic() - started > timeout:
                raise FaultError(f"{link} is not {state} {timeout:g} s after QEMU was "
                                 "asked (the guest's kernel or udev did not follow)")
            time.sleep(LINK_POLL_S)
        return f"{link} {state} after {time.monotonic() - started:.2f} s"

    return Command(text=f"wait until {link} is {state}", call=call)


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    # Outside the lab (cleanup after the VM is gone) there is nothing to undo: the
    # throttle and the plugged or pulled device lived in the QEMU process, which ended
    # with the VM (the next boot has every disk, from fresh images).
    if not os.environ.get(CHANNEL_ENV):
        return []
    name = str(data["disk"])
    if not data.get("pulled"):
        return [_request("return", name)]
    # A pull's return plugs the disk back if it is out, whatever the pull got to.
    return [_request("return", name, timeout=PLUG_ANSWER_TIMEOUT), _wait_link(name, True)]


@undoer("fault-labdisk")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def slow(fault: FaultSpec) -> Action:
    """The lab disk `fault.device` names, cut to `percent` of its class in QEMU."""
    _need_lab(fault, "slowing", "on the host, slow a target with limits: instead")
    name = disk_name(str(fault.device))
    percent = int(fault.options.get("percent", DEFAULT_PERCENT))
    return Action("slow", "fault-labdisk", {"disk": name},
                  lambda: [_request("slow", name, percent)], _undo_commands,
                  facts={"percent": percent, "disk": name, "via": "qmp"})


def pull(fault: FaultSpec, may_lose: str = "", md_member: bool = False) -> Action:
    """The lab disk `fault.device` names, pulled out of the running guest: done once its
    by-id link is gone (and, for an md member, once md shows the array degraded, or
    after MD_NOTICE_TIMEOUT: the record says which). Its journal entry (written before
    the request) plugs it back whatever happens while the VM runs; `may_lose`: why the
    pull may cost data ('' when a copy elsewhere holds it)."""
    _need_lab(fault, "pulling", "a host loop disk cannot be pulled (docs/faults.md)")
    name = disk_name(str(fault.device))

    def steps() -> list[Command]:
        out = [_request("pull", name, timeout=PLUG_ANSWER_TIMEOUT), _wait_link(name, False)]
        return [*out, _wait_md_degraded()] if md_member else out

    return Action("pull", "fault-labdisk", {"disk": name, "pulled": True}, steps,
                  _undo_commands, facts={"disk": name, "via": "qmp"}, may_lose=may_lose)


def degraded(mdstat: str) -> bool:
    """Does /proc/mdstat show an array missing a member ("[2/1]") or one marked (F)?"""
    return any(m.group(0) == "(F)" or m.group(1) != m.group(2)
               for m in _DEGRADED.finditer(mdstat))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"


def _wait_md_degraded(timeout: float = MD_NOTICE_TIMEOUT) -> Command:
    """The step that watches /proc/mdstat until md shows the loss (never an error: an md
    that has not noticed yet is a finding, recorded with the file as it was)."""

    def call() -> str:
        started = time.monotonic()
        while not degraded(text := _read(MDSTAT)):
            if time.monotonic() - started > timeout:
                return f"md shows no member missing after {timeout:g} s:\n{text}"
            time.sleep(LINK_POLL_S)
        return f"md degraded after {time.monotonic() - started:.2f} s:\n{text}"

    return Command(text="wait until /proc/mdstat shows the array degraded", call=call)


def _need_lab(fault: FaultSpec, doing: str, instead: str) -> None:
    if not os.environ.get(CHANNEL_ENV):
        raise FaultError(f"{fault.device}: {doing} a lab disk needs the lab (volbench lab "
                         f"run); {instead}")


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
