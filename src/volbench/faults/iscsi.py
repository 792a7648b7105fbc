"""iSCSI path faults: `cut` / `restore` of the path between initiator and target.

    cut:     echo 0 > /sys/kernel/config/target/iscsi/IQN/tpgt_1/enable
             (LIO's target portal group off: its sessions are dropped and logins
             refused, as when the portal is unreachable)
    restore: echo 1 > the same file (the initiator logs in again on its own)

The initiator queues I/O for `replacement_timeout` seconds (the target's
`replacement_timeout:`, 15 s by default, targets/iscsi.py), then fails it: a cut shorter
than that is a stall, a longer one I/O errors (EIO, or ENOLINK for the I/O the kernel held
when the time ran out) until the initiator is logged in again. The timeout is recorded
with the event; each second the session's state and its SCSI disk's state are sampled
from sysfs ("blocked" while the I/O waits, "transport-offline" once the timeout has failed
it, "running" again after the login). Only the portal group of a target volbench created
(LIO, `server: lio`) is switched; tgt targets are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.block.iscsiserver import CONFIGFS
from volbench.system.journal import undoer
from volbench.targets.base import Built

SYSFS = Path("/sys")


def path_state(iqn: str, disk: str) -> dict[str, Any]:
    """The initiator's view of the path: its session's state (LOGGED_IN, FAILED, ...) and
    the SCSI disk's (running, blocked, transport-offline); None for what is not there."""
    session = next((d for d in sorted((SYSFS / "class" / "iscsi_session").glob("session*"))
                    if _read(d / "targetname") == iqn), None)
    return {"session": _read(session / "state") if session else None,
            "disk": _read(SYSFS / "block" / Path(disk).name / "device" / "state")}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def enable_file(iqn: str) -> Path:
    """LIO's switch of the target's portal group (configfs)."""
    return CONFIGFS / "iscsi" / iqn / "tpgt_1" / "enable"


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The portal group on again, while the target exists (teardown may have removed it)."""
    path = enable_file(str(data["iqn"]))
    return [Command(path=str(path), text="1")] if path.exists() else []


@undoer("fault-iscsi-path")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def cut(fault: FaultSpec, built: Built) -> Action:
    """The path to the LIO target of `built` cut; undone by switching it back on."""
    server = built.info.get("server", {})
    iqn = built.info.get("iqn")
    if server.get("server") != "lio" or not iqn:
        raise FaultError(f"target {built.name}: a path cut switches LIO's portal group; "
                         "this target's server is not LIO (set server: lio)")
    session = built.info.get("session", {})
    timeout = session.get("Recovery Timeout")  # iscsiadm -P 3's replacement_timeout
    path = str(enable_file(str(iqn)))
    disk = str(session.get("disk") or built.block_device or "")
    return Action("cut", "fault-iscsi-path", {"iqn": iqn},
                  lambda: [Command(path=path, text="0")], _undo_commands,
                  facts={"replacement_timeout_s": timeout, "portal": built.info.get("portal")},
                  sample=lambda: {"iscsi_path": path_state(str(iqn), disk)})
