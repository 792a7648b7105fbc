"""What the storage-stack targets (lvm, mdraid, nfs, iscsi) share.

- kernel features: device-mapper, md, nfsd, the iSCSI initiator; a missing one is
  loaded with modprobe once, and if it still is not there the target fails with a
  ResourceError that names the lab (`volbench lab run`) as the fix;
- names for the VGs, arrays, exports and IQNs volbench creates (unique per process,
  so a leftover of a killed run never collides with a new one);
- members: which device a journaled member is *now*, and whether it is still ours
  (a loop device is checked against its backing file before an undo touches it);
- waiting for a device, a socket or a port (daemons a target starts: daemons.py).
"""

from __future__ import annotations

import os
import re
import socket
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from volbench.core.errors import ResourceError
from volbench.system import proc, procfs
from volbench.system.block.devices import loops_backed_by
from volbench.system.block.disks import Disk
from volbench.system.daemons import wait_for

LAB_FIX = (
    "run the experiment in the lab VM instead: volbench lab run FILE (docs/lab.md), "
    "or on a machine whose kernel has it"
)
_LOOP = re.compile(r"^/dev/loop\d+$")


# -- kernel features -------------------------------------------------------------------------



def device_mapper_present() -> bool:
    return Path("/sys/module/dm_mod").exists() or "device-mapper" in procfs.read_text("/proc/misc")


def md_present() -> bool:
    return Path("/proc/mdstat").exists()


def filesystem_present(name: str) -> bool:
    lines = procfs.read_text("/proc/filesystems").splitlines()
    return any(line.split()[-1:] == [name] for line in lines)


def iscsi_initiator_present() -> bool:
    return Path("/sys/class/iscsi_transport/tcp").exists()


FEATURES: dict[str, tuple[Callable[[], bool], tuple[str, ...]]] = {
    "device-mapper": (device_mapper_present, ("dm-mod",)),
    "md RAID": (md_present, ("md-mod",)),
    "the NFS server (nfsd)": (lambda: filesystem_present("nfsd"), ("nfsd",)),
    "the NFS client": (lambda: filesystem_present("nfs"), ("nfs",)),
    "the iSCSI initiator (iscsi_tcp)": (iscsi_initiator_present, ("iscsi_tcp",)),
}


def require_feature(feature: str, who: str, extra_modules: Sequence[str] = ()) -> None:
    """Make sure the kernel has `feature` (loading its modules once), else ResourceError."""
    present, modules = FEATURES[feature]
    if present() and not extra_modules:
        return
    # modprobe is quiet when a module is built in or already loaded; its exit code is
    # not trusted (a module may be missing while the feature is built in): look again.
    proc.run(["modprobe", "-a", *modules, *extra_modules], timeout=120, check=False)
    if present():
        return
    raise ResourceError(
        f"{who} needs {feature}, which this kernel does not have (modprobe "
        f"{' '.join(modules)} found no module; `volbench doctor` shows what is missing); " + LAB_FIX
    )


# -- names -----------------------------------------------------------------------------------


def safe_name(text: str, limit: int = 24) -> str:
    """Lower-case letters, digits and '_' only: valid for LVM, md, targetcli and IQNs."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "t"
    return cleaned[:limit]


def unique_name(prefix: str, target: str, limit: int = 24) -> str:
    """'vb_<target>_<pid>': unique per volbench process, recognisable in `lvs`, mdstat …"""
    return f"{prefix}_{safe_name(target, limit)}_{os.getpid()}"


# -- members (the disks a VG or array is made of) --------------------------------------------


def member_record(disk: Disk) -> dict[str, Any]:
    """What the journal keeps of a member: its node, and its image if it is a loop disk."""
    return {"device": disk.device, "backing": disk.image}


def current_member(member: Mapping[str, Any]) -> str | None:
    """The member's device node if it still exists and is still ours, else None.

    A loop device may have been detached and reused by someone else since it was
    journaled: it is ours only while it is backed by the image we made.
    """
    device = str(member.get("device") or "")
    if not device:
        return None
    try:
        if not stat.S_ISBLK(os.stat(device).st_mode):
            return None
    except OSError:
        return None
    node = os.path.realpath(device)
    backing = member.get("backing")
    if backing:
        return node if node in loops_backed_by(str(Path(backing).resolve())) else None
    if _LOOP.match(node):
        return None  # a loop device we did not make: never assume it is still ours
    return node


# -- waiting ---------------------------------------------------------------------------------


def unix_socket_listening(path: str) -> bool:
    """True if something accepts connections on the Unix socket `path` (or @abstract)."""
    address = "\0" + path[1:] if path.startswith("@") else path
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        try:
            sock.connect(address)
        except OSError:
            return False
    return True


def tcp_listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


__all__ = ["wait_for"]
