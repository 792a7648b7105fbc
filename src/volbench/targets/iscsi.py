"""iSCSI: a target over a block device and the open-iscsi initiator logged in over 127.0.0.1.

    - {name: lun, type: disk, device: /dev/disk/by-id/virtio-d2, fs: none}
    - {name: iscsi-raw, type: iscsi, on: [lun], fs: xfs}              # LIO, port 3260
    - {name: iscsi-tgt, type: iscsi, device: /dev/disk/by-id/virtio-d3, server: tgt}
    - {name: lun5, type: iscsi, device: /dev/disk/by-id/virtio-d4, replacement_timeout: 5s}

The LUN is the block device of the target named in `on:` (which must carry no
filesystem: `fs: none`), or a disk of the iSCSI target's own (`device:`/`devices:`
or `disks: 1`, guarded as for `disk`). `server: lio` (default) makes a kernel LIO
target with targetcli, `server: tgt` runs the user-space tgtd (iscsiserver.py).
The initiator (iscsid: the running one, or one volbench starts) logs in to
`portal` (default 127.0.0.1:3260 for LIO, 127.0.0.1:3261 for tgt); the SCSI disk
that appears gets a filesystem (`fs:`, default xfs; `none` gives the raw disk, as
a raw LUN). `replacement_timeout` (default 15 s) is how long the initiator queues I/O
while the path is down before it fails it (open-iscsi's
node.session.timeo.replacement_timeout, set on the node record before the login).
Seed 003's "iSCSI datastore" is an `image` target (thick or thin) `on:`
an iSCSI target with a filesystem.

Teardown (and `volbench cleanup`): unmount, log out and delete the node record,
delete the LIO target and backstore (or end tgtd), end the daemons volbench started.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Duration, Text
from volbench.core.errors import ResourceError
from volbench.system import daemons, proc
from volbench.system.block import blockstack, iscsiserver, stackparse
from volbench.system.block.disks import DiskSource, provide
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.system.block.mounts import make_tree
from volbench.system.host.tools import require
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present
from volbench.targets.source import FIELDS as OWN_DISK_FIELDS
from volbench.targets.source import parse_own_disk

SERVERS = ("lio", "tgt")
DEFAULT_PORT = {"lio": 3260, "tgt": 3261}
IQN_PREFIX = "iqn.2003-01.org.volbench"
ISCSID_SOCKET = "@ISCSIADM_ABSTRACT_NAMESPACE"
INITIATOR_NAME = Path("/etc/iscsi/initiatorname.iscsi")
TIMEOUT = 120.0
REPLACEMENT_TIMEOUT = 15


@dataclass(frozen=True)
class IscsiSpec(TargetSpec):
    """An iSCSI target as the experiment file gives it: the fields, read and checked."""

    source: DiskSource | None = None
    server: str = "lio"
    host: str = "127.0.0.1"
    port: int = 3260
    fs: FsSpec = FsSpec("xfs")
    replacement_timeout: int = REPLACEMENT_TIMEOUT


SERVER = Text("server", "lio", choices=SERVERS, help="the iSCSI target server")
TIMEOUT_FIELD = Duration(
    "replacement_timeout", f"{REPLACEMENT_TIMEOUT}s",
    help="how long the initiator queues I/O while the path is down, then fails it "
         "(whole seconds, 1s to 1h)")
PORTAL = Text("portal", None, help="ADDRESS:PORT on this machine; default 127.0.0.1:3260 "
                                   "(lio) or 127.0.0.1:3261 (tgt)")


def parse(r: Reader, name: str, limits: Limits) -> IscsiSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    source = parse_own_disk(r)
    server = r.get(SERVER)
    portal = r.get(PORTAL.defaulting(f"127.0.0.1:{DEFAULT_PORT.get(server, 3260)}"))
    host, _, port_text = portal.rpartition(":")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        r.problem("portal", f"'{portal}' is not ADDRESS:PORT", "e.g. portal: 127.0.0.1:3260")
        host, port_text = "127.0.0.1", "3260"
    timeout = r.get(TIMEOUT_FIELD)
    if timeout != int(timeout) or not 1 <= timeout <= 3600:
        r.problem("replacement_timeout", f"{timeout:g} s is not a whole number of seconds "
                  "from 1 to 3600", "e.g. replacement_timeout: 5s")
    if host not in ("127.0.0.1", "localhost"):
        r.problem(
            "portal",
            "only a portal on this machine (127.0.0.1) is supported",
            "the target and the initiator both run here",
        )
    return IscsiSpec(
        name,
        "iscsi",
        limits,
        source=source,
        server=server,
        host="127.0.0.1",
        port=int(port_text),
        fs=parse_fs(r),
        replacement_timeout=int(timeout),
    )


def _backing(spec: IscsiSpec, ctx: BuildContext) -> tuple[str, list[str], dict[str, Any]]:
    """The device the LUN exports: the `on:` target's (raw) device, or our own disk."""
    if spec.on:
        base = ctx.deps[spec.on[0]]
        if base.block_device is None:
            raise ResourceError(
                f"target {spec.name}: {base.name} ({base.type}) has no block device to export"
            )
        if base.path is not None:
            raise ResourceError(
                f"target {spec.name}: {base.name} carries a mounted filesystem; exporting its "
                f"device would let two kernels write one filesystem: give {base.name} fs: none"
            )
        device = os.path.realpath(base.block_device)
        return device, list(base.devices), {"target": base.name, "type": base.type}
    assert spec.source is not None
    disk = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir, ctx.redirect)[0]
    return disk.device, [disk.device], {"disk": disk.as_info()}


def _iscsid_up() -> bool:
    return blockstack.unix_socket_listening(ISCSID_SOCKET)


def ensure_iscsid(scope: Scope, recipe: Recipe, logs: Path) -> str:
    """iscsid is running when this returns: the one found, or one started by volbench and
    journaled in `scope`; returns which. A missing initiator name is a ResourceError
    saying how to create it."""
    if not INITIATOR_NAME.exists():
        raise ResourceError(
            f"{INITIATOR_NAME} is missing: create it with `echo "
            f"InitiatorName=$(iscsi-iname) > {INITIATOR_NAME}`"
        )
    if blockstack.unix_socket_listening(ISCSID_SOCKET):
        return "already running"
    daemons.start(
        scope,
        recipe,
        ["iscsid", "-f"],
        logs / "iscsid.log",
        lambda: blockstack.unix_socket_listening(ISCSID_SOCKET),
        what="iscsid",
    )
    return "started by volbench"


def _node(iqn: str, portal: str) -> list[str]:
    return ["iscsiadm", "-m", "node", "-T", iqn, "-p", portal]


def session_views() -> list[stackparse.IscsiTargetView]:
    """The host's iSCSI sessions as `iscsiadm -m session -P 3` lists them (empty when
    there are none)."""
    done = proc.run(["iscsiadm", "-m", "session", "-P", "3"], timeout=60, check=False)
    return stackparse.iscsi_session_detail(done.stdout)


def login(scope: Scope, recipe: Recipe, iqn: str, portal: str,
          replacement_timeout: int = REPLACEMENT_TIMEOUT) -> stackparse.IscsiTargetView:
    """A node record for exactly this target (no discovery: on a real host that would
    record every target the portal offers) with its replacement_timeout, then login;
    waits for the SCSI disk."""
    scope.add("iscsi-session", name=iqn, iqn=iqn, portal=portal)
    recipe.run([*_node(iqn, portal), "-o", "new"], timeout=TIMEOUT)
    # I/O fails after 15 s (by default) instead of open-iscsi's 120 s when the target
    # vanishes (a killed tgtd): teardown and cleanup then never hang that long on a dead LUN.
    recipe.run(
        [
            *_node(iqn, portal),
            "-o",
            "update",
            "-n",
            "node.session.timeo.replacement_timeout",
            "-v",
            str(replacement_timeout),
        ],
        timeout=TIMEOUT,
    )
    recipe.run([*_node(iqn, portal), "--login"], timeout=TIMEOUT)

    def attached() -> stackparse.IscsiTargetView | None:
        view = next((v for v in session_views() if v.target == iqn and v.disks), None)
        return view if view and Path(f"/dev/{view.disks[0]}").exists() else None

    view = blockstack.wait_for(attached, 60, interval=0.5)
    if view is None:
        raise ResourceError(
            f"logged in to {iqn} but no SCSI disk appeared within 60 s "
            "(iscsiadm -m session -P 3 shows the session)"
        )
    return view


def _logged_in(iqn: str) -> bool:
    sessions = proc.run(["iscsiadm", "-m", "session"], timeout=60, check=False).stdout
    return any(s.target == iqn for s in stackparse.iscsi_sessions(sessions))


@undoer("iscsi-session")
def _undo_session(data: Mapping[str, Any]) -> None:
    iqn, portal = str(data["iqn"]), str(data["portal"])
    # iscsiadm needs iscsid: if none answers (stopped, crashed), a temporary one.
    with daemons.temporary(["iscsid", "-f"], _iscsid_up, "iscsid"):
        # A session iscsid has only just taken over (or is reconnecting) may refuse the
        # logout for a moment: try for up to 30 s.
        for _ in range(15):
            if not _logged_in(iqn):
                break
            proc.run([*_node(iqn, portal), "--logout"], timeout=TIMEOUT, check=False)
            if _logged_in(iqn):
                time.sleep(2.0)
        if _logged_in(iqn):
            proc.run([*_node(iqn, portal), "--logout"], timeout=TIMEOUT)
        # Exit 21 = no such record: already deleted.
        done = proc.run([*_node(iqn, portal), "-o", "delete"], timeout=TIMEOUT, check=False)
    if done.returncode not in (0, 21):
        raise ResourceError(
            f"iscsiadm could not delete the node record of {iqn}: {done.stderr.strip()}"
        )


@contextmanager
def build(spec: IscsiSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    blockstack.require_feature("the iSCSI initiator (iscsi_tcp)", f"target {spec.name} (iscsi)")
    for tool in (
        "iscsiadm",
        "iscsid",
        *(("targetcli", "dbus-daemon") if spec.server == "lio" else ("tgtd", "tgtadm")),
    ):
        require(tool)
    device, devices, backing = _backing(spec, ctx)
    # Daemon logs and targetcli's private home, removed at teardown with what is in them.
    logs = make_tree(ctx.scope, ctx.workdir / "logs")
    name = blockstack.unique_name("vb", spec.name)
    iqn = f"{IQN_PREFIX}:{name.replace('_', '-')}"
    portal = (spec.host, spec.port)
    server: dict[str, Any]
    if spec.server == "lio":
        dbus = iscsiserver.ensure_dbus(ctx.scope, ctx.recipe, logs)
        server = iscsiserver.create_lio(
            ctx.scope,
            ctx.recipe,
            iqn=iqn,
            backstore=name,
            device=device,
            portal=portal,
            home=logs / "targetcli-home",
        )
        server["dbus"] = dbus
    else:
        server = iscsiserver.create_tgt(
            ctx.scope, ctx.recipe, iqn=iqn, device=device, portal=portal, logs=logs
        )
    initiator = ensure_iscsid(ctx.scope, ctx.recipe, logs)
    view = login(ctx.scope, ctx.recipe, iqn, f"{spec.host}:{spec.port}",
                 spec.replacement_timeout)
    disk = f"/dev/{view.disks[0]}"
    info: dict[str, Any] = {
        "server": server,
        "iqn": iqn,
        "portal": f"{spec.host}:{spec.port}",
        "backing": {"device": device, **backing},
        "initiator": {"iscsid": initiator},
        "session": {"state": view.session_state, "disk": disk, **view.params},
        "fs": spec.fs.fs,
        "summary": f"iSCSI ({spec.server}) over loopback, {spec.fs.fs}",
    }
    devices = [disk, *devices]
    yield present(ctx, spec, spec.fs, disk, devices, info)


KIND = TargetKind(
    "iscsi",
    "an iSCSI LUN (LIO or tgt) over another target's device or a disk of its own, "
    "logged in over 127.0.0.1 (needs the iSCSI modules: the lab VM)",
    parse,
    build,
    loop_devices=lambda s: s.source.loop_devices if s.source else 0,
    disk_space=lambda s: s.source.disk_space if s.source else 0,
    on_count=(0, 1),
    tools=("iscsiadm", "iscsid"),
    fields=(SERVER, PORTAL, TIMEOUT_FIELD, *OWN_DISK_FIELDS, *fs_fields()),
)
