"""NFS: a server exporting a filesystem and a client mount of it, both on this machine.

    - {name: store, type: disk, device: /dev/disk/by-id/virtio-d4, fs: xfs}
    - {name: nfs4, type: nfs, on: [store], version: "4.2"}
    - {name: nfs3, type: nfs, device: /dev/disk/by-id/virtio-d5, version: 3,
       mount_options: [nconnect=2]}

What is exported: a private folder (`volbench-nfs-<name>-<pid>`) on the mount of
the target named in `on:`, or on a filesystem (`fs:`, default xfs) made on a disk
of the NFS target's own (`device:`/`devices:` or `disks: 1`, as for `disk`). The
folder is exported to 127.0.0.1 (`exportfs -o rw,sync,no_root_squash,
no_subtree_check`: root must stay root for PostgreSQL's data directory) and
mounted over loopback with `vers=`; NFSv4 exports get `fsid=0` and are mounted as
`127.0.0.1:/` (the pseudo-root: in the lab the real `/` is 9p and not exportable),
so one NFSv4 target exists at a time per machine (order: sequential for more).

A network hop: `client_netns: NAME` with `server_address: ADDRESS` mounts from inside
the network namespace NAME (`nsenter --net`, so the mount stays visible here while its
RPC traffic crosses that namespace's links, and any `tc netem` delay on them). The
folder is exported to the address the namespace uses to reach the server (`ip -j route
get`). The namespace and its links are the user's (the tests make veth pairs):

    - {name: nfs-hop, type: nfs, on: [store], version: 3, client_netns: vb1,
       server_address: 10.213.1.1}

The server: if nfsd already runs (threads in /proc/fs/nfsd/threads), volbench only
adds and removes its export. Otherwise it starts what a server needs, in the
foreground and journaled, and stops it at teardown: rpcbind, rpc.statd (NFSv3
locks), rpc.mountd, and `rpc.nfsd N` kernel threads (`rpc.nfsd 0` stops them).

Caches: server and client share this kernel, so the runner's cache drop empties
both before each run. With the server on another host it would need the
multi-host work (each host drops its own). `limits:` cannot throttle NFS (nfsd's
kernel threads do the disk I/O, outside any cgroup): use lab disk classes.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Field, Integer, Text, TextList
from volbench.core.errors import CommandFailed, ResourceError
from volbench.remote.hosts import NETNS_DIR, route_source, valid_netns
from volbench.system import daemons, proc
from volbench.system.block import blockstack, stackparse
from volbench.system.block.disks import DiskSource, provide
from volbench.system.block.filesystems import FsSpec, fs_fields, make_and_mount, parse_fs
from volbench.system.block.mounts import is_mounted, make_dir, make_tree, mount_info
from volbench.system.host.tools import require
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec
from volbench.targets.source import FIELDS as OWN_DISK_FIELDS
from volbench.targets.source import parse_own_disk

VERSIONS = ("3", "4", "4.0", "4.1", "4.2")
CLIENT = "127.0.0.1"
DEFAULT_EXPORT = ("rw", "sync", "no_root_squash", "no_subtree_check")
NFSD = Path("/proc/fs/nfsd")
TIMEOUT = 120.0


@dataclass(frozen=True)
class NfsSpec(TargetSpec):
    """An NFS target as the experiment file gives it: the fields, read and checked."""

    # The NFS target's own disk when it is not built on another target.
    source: DiskSource | None = None
    fs: FsSpec = FsSpec("xfs")
    version: str = "4.2"
    export_options: tuple[str, ...] = DEFAULT_EXPORT
    mount_options: tuple[str, ...] = ()
    threads: int = 8
    # A network hop: mount from this namespace, to this server address (docs above).
    client_netns: str | None = None
    server_address: str = CLIENT

    @property
    def v4(self) -> bool:
        """Whether the spec asks for NFSv4 (version 4, 4.0, 4.1 or 4.2) rather than 3."""
        return self.version.startswith("4")


# `version` is read raw: YAML reads an unquoted 4.2 as a number.
VERSION = Text("version", "4.2", choices=VERSIONS, help="NFS version")
EXPORT_OPTIONS = TextList("export_options", list(DEFAULT_EXPORT), help="exportfs -o options")
MOUNT_OPTIONS = TextList("mount_options", [], help="client mount -o options (not vers=)")
THREADS = Integer("threads", 8, minimum=1, maximum=256, help="nfsd threads")
CLIENT_NETNS = Text("client_netns", None,
                    help="mount from this network namespace (a network hop); needs "
                         "server_address")
SERVER_ADDRESS = Text("server_address", CLIENT, help="the address the client mounts from")
FIELDS: tuple[Field[Any], ...] = (VERSION, EXPORT_OPTIONS, MOUNT_OPTIONS, THREADS,
                                  CLIENT_NETNS, SERVER_ADDRESS)


def parse(r: Reader, name: str, limits: Limits) -> NfsSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    if limits:
        r.problem(
            "limits",
            "blkio limits cannot throttle NFS: nfsd's kernel threads do "
            "the disk I/O outside any cgroup",
            "use a lab disk class for the disk under it (docs/lab.md)",
        )
    source = parse_own_disk(r)
    # mount_options are the NFS client's (nconnect=, rsize= …): the filesystem under the
    # export is mounted without them (parse_fs reads the same field for other types).
    fs = replace(parse_fs(r), mount_options=()) if source is not None else FsSpec("xfs")
    if source is not None and not fs.mounted:
        r.problem("fs", "an NFS export needs a filesystem", "use fs: xfs or ext4")
    raw = r.raw(VERSION.name, VERSION.default)
    version = str(raw)
    if version not in VERSION.choices:
        r.problem(
            "version",
            f"'{raw}' is not one of: {', '.join(VERSION.choices)}",
            'quote it in YAML: version: "4.2"',
        )
        version = VERSION.default
    export = tuple(r.get(EXPORT_OPTIONS))
    if any(o.startswith("fsid=") for o in export) and version.startswith("4"):
        r.problem("export_options", "volbench sets fsid=0 for NFSv4 itself", "remove fsid=")
    mount = tuple(r.get(MOUNT_OPTIONS))
    if any(o.startswith(("vers=", "nfsvers=")) for o in mount):
        r.problem("mount_options", "the NFS version is set by version:", "remove vers=")
    # Read only when given, as they always were (a field read counts as known to the
    # did-you-mean hint of an unknown one).
    netns = r.get(CLIENT_NETNS) if r.has(CLIENT_NETNS.name) else None
    if netns is not None and not valid_netns(netns):
        r.problem(
            "client_netns",
            f"'{netns}' is not a network namespace name",
            "use letters, digits, '.', '_' or '-' (as in ip netns add)",
        )
    server = (r.get(SERVER_ADDRESS) if r.has(SERVER_ADDRESS.name)
              else str(SERVER_ADDRESS.default))
    if not _is_address(server):
        r.problem("server_address", f"'{server}' is not an IP address", "e.g. 10.213.1.1")
    if netns is not None and not r.has("server_address"):
        r.problem(
            "server_address",
            "client_netns needs the address the namespace reaches this machine's NFS server at",
            "add server_address: ADDRESS",
        )
    return NfsSpec(
        name,
        "nfs",
        limits,
        source=source,
        fs=fs,
        version=version,
        export_options=export,
        mount_options=mount,
        threads=r.get(THREADS),
        client_netns=netns,
        server_address=server,
    )


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def in_client_netns(spec: NfsSpec, argv: list[str]) -> list[str]:
    """argv run with the client's network (not its mounts: the mount must be seen here)."""
    if spec.client_netns is None:
        return argv
    return ["nsenter", f"--net={NETNS_DIR / spec.client_netns}", *argv]


def client_address(spec: NfsSpec) -> str:
    """The address NFS requests come from: what the export must name."""
    if spec.client_netns is None:
        return CLIENT
    if not (NETNS_DIR / spec.client_netns).exists():
        raise ResourceError(
            f"target {spec.name}: network namespace {spec.client_netns} does not exist "
            f"(no {NETNS_DIR / spec.client_netns}); create it first (ip netns add)"
        )
    done = proc.run(
        in_client_netns(spec, ["ip", "-j", "route", "get", spec.server_address]),
        timeout=30,
        check=False,
    )
    source = route_source(done.stdout) if done.returncode == 0 else None
    if source is None:
        raise ResourceError(
            f"target {spec.name}: namespace {spec.client_netns} has no route to "
            f"{spec.server_address} ({done.stderr.strip() or 'no source address'}); "
            "give server_address an address of this machine that the namespace reaches"
        )
    return source


# -- the server ------------------------------------------------------------------------------


def _rpc_registered(program: str) -> bool:
    done = proc.run(["rpcinfo", "-T", "tcp", CLIENT, program], timeout=30, check=False)
    return done.returncode == 0


def _registered(program: str) -> Callable[[], bool]:
    return lambda: _rpc_registered(program)


def nfsd_threads() -> int:
    """How many nfsd threads the kernel runs now; 0 when nfsd is not up or unreadable."""
    try:
        return int((NFSD / "threads").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def ensure_server(scope: Scope, recipe: Recipe, spec: NfsSpec, logs: Path) -> dict[str, Any]:
    """An NFS server on this machine: the one running, or one volbench starts."""
    if not is_mounted(NFSD):
        scope.add("nfsd-fs")
        recipe.run(["mount", "-t", "nfsd", "nfsd", str(NFSD)], timeout=TIMEOUT)
    if nfsd_threads() > 0:
        return {"server": "already running", "threads": nfsd_threads()}
    started = []
    if not blockstack.tcp_listening(CLIENT, 111):
        daemons.start(
            scope,
            recipe,
            ["rpcbind", "-f"],
            logs / "rpcbind.log",
            lambda: blockstack.tcp_listening(CLIENT, 111),
            what="rpcbind",
        )
        started.append("rpcbind")
    for program, argv in (("status", ["rpc.statd", "-F"]), ("mountd", ["rpc.mountd", "-F"])):
        if not _rpc_registered(program):
            daemons.start(
                scope, recipe, argv, logs / f"{argv[0]}.log", _registered(program), what=argv[0]
            )
            started.append(argv[0])
    scope.add("nfsd-threads")
    # A 10 s grace period instead of 90 s: a fresh server has no clients to wait for.
    recipe.run(["rpc.nfsd", "-G", "10", str(spec.threads)], timeout=TIMEOUT)
    started.append(f"rpc.nfsd {spec.threads}")
    return {"server": "started by volbench", "started": started, "threads": nfsd_threads()}


@undoer("nfsd-threads")
def _undo_threads(data: Mapping[str, Any]) -> None:
    if nfsd_threads() > 0:
        proc.run(["rpc.nfsd", "0"], timeout=TIMEOUT)


@undoer("nfsd-fs")
def _undo_nfsd_fs(data: Mapping[str, Any]) -> None:
    if is_mounted(NFSD) and nfsd_threads() == 0:
        proc.run(["umount", str(NFSD)], timeout=TIMEOUT)


# -- export and mount ------------------------------------------------------------------------


def exports() -> list[stackparse.Export]:
    """The kernel's current exports as `exportfs -v` lists them."""
    done = proc.run(["exportfs", "-v"], timeout=TIMEOUT, check=False)
    return stackparse.exportfs_v(done.stdout)


def export(
    scope: Scope, recipe: Recipe, path: Path, options: tuple[str, ...], client: str = CLIENT
) -> None:
    """Export `path` to `client` with `options`; journaled before it is made, so teardown
    or `volbench cleanup` unexports exactly this client and path."""
    scope.add("nfs-export", client=client, path=str(path))
    recipe.run(["exportfs", "-o", ",".join(options), f"{client}:{path}"], timeout=TIMEOUT)


@undoer("nfs-export")
def _undo_export(data: Mapping[str, Any]) -> None:
    client, path = str(data["client"]), str(data["path"])
    if any(e.client == client and e.path == path for e in exports()):
        proc.run(["exportfs", "-u", f"{client}:{path}"], timeout=TIMEOUT)


def nfs_mount(
    scope: Scope,
    recipe: Recipe,
    source: str,
    mountpoint: Path,
    options: list[str],
    wrap: Callable[[list[str]], list[str]] = lambda argv: argv,
) -> None:
    """Mount `source` on `mountpoint` (made if missing), journaled first; retried twice
    because a server that has just started may not answer at once."""
    make_dir(scope, mountpoint)
    scope.add("nfs-mount", mountpoint=str(mountpoint), source=source)
    argv = wrap(["mount", "-t", "nfs", "-o", ",".join(options), source, str(mountpoint)])
    for attempt in range(3):  # a server that has just started may not answer at once
        try:
            recipe.run(argv, timeout=TIMEOUT)
            return
        except CommandFailed:
            if attempt == 2:
                raise
            time.sleep(2.0)


@undoer("nfs-mount")
def _undo_nfs_mount(data: Mapping[str, Any]) -> None:
    mountpoint = Path(data["mountpoint"])
    if not is_mounted(mountpoint):
        return
    done = proc.run(["umount", str(mountpoint)], timeout=60, check=False)
    if done.returncode != 0 and is_mounted(mountpoint):
        # A server that is gone would make a plain umount hang on a hard mount.
        proc.run(["umount", "-f", "-l", str(mountpoint)], timeout=60)


def _exported_fs(spec: NfsSpec, ctx: BuildContext) -> tuple[Path, list[str], dict[str, Any]]:
    """The filesystem to export: the `on:` target's mount, or one on our own disk."""
    if spec.on:
        base = ctx.deps[spec.on[0]]
        if base.path is None:
            raise ResourceError(
                f"target {spec.name}: {base.name} ({base.type}) has no "
                f"filesystem to export; give {base.name} fs: xfs"
            )
        return base.path, list(base.devices), {"target": base.name, "type": base.type}
    assert spec.source is not None
    disk = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir, ctx.redirect)[0]
    mnt = make_and_mount(ctx.scope, ctx.recipe, spec.fs, [disk.device], ctx.workdir / "export-fs")
    return mnt, [disk.device], {"disk": disk.as_info(), "fs": spec.fs.fs}


@contextmanager
def build(spec: NfsSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    blockstack.require_feature("the NFS server (nfsd)", f"target {spec.name} (nfs)")
    blockstack.require_feature("the NFS client", f"target {spec.name} (nfs)")
    for tool in (
        "exportfs",
        "rpc.nfsd",
        "rpc.mountd",
        "rpc.statd",
        "rpcbind",
        "rpcinfo",
        "mount.nfs",
    ):
        require(tool)
    base, devices, exported_from = _exported_fs(spec, ctx)
    options = spec.export_options
    if spec.v4:
        roots = [e for e in exports() if e.option("fsid") in ("0", "root")]
        if roots:
            raise ResourceError(
                f"target {spec.name}: {roots[0].path} is already the NFSv4 root (fsid=0); "
                "one NFSv4 target at a time: use order: sequential, or version: 3"
            )
        options = (*options, "fsid=0")
    folder = make_tree(
        ctx.scope, base / f"volbench-nfs-{blockstack.safe_name(spec.name)}-{os.getpid()}"
    )
    server = ensure_server(ctx.scope, ctx.recipe, spec, make_tree(ctx.scope, ctx.workdir / "logs"))
    client = client_address(spec)
    export(ctx.scope, ctx.recipe, folder, options, client)
    server_at = f"[{spec.server_address}]" if ":" in spec.server_address else spec.server_address
    source = f"{server_at}:/" if spec.v4 else f"{server_at}:{folder}"
    mnt = ctx.workdir / "mnt"
    nfs_mount(
        ctx.scope,
        ctx.recipe,
        source,
        mnt,
        [f"vers={spec.version}", *spec.mount_options],
        lambda argv: in_client_netns(spec, argv),
    )
    info: dict[str, Any] = {
        "version": spec.version,
        "source": source,
        "exported": str(folder),
        "exported_from": exported_from,
        "server": server,
        "export": [e.__dict__ for e in exports() if e.path == str(folder)],
        "mount": mount_info(mnt),
        "caches": "server and client share this kernel: one cache drop empties both",
        "client": {"netns": spec.client_netns, "address": client},
        "summary": f"NFSv{spec.version} over loopback ({CLIENT})"
        if spec.client_netns is None
        else f"NFSv{spec.version} from namespace {spec.client_netns} ({client}) "
        f"to {spec.server_address}",
    }
    yield Built(spec.name, spec.type, path=mnt, block_device=None, devices=devices, info=info)


KIND = TargetKind(
    "nfs",
    "an NFS export (of another target's filesystem, or of a disk of its own) mounted over "
    "127.0.0.1, v3 or v4.x (needs nfsd: the lab VM)",
    parse,
    build,
    loop_devices=lambda s: s.source.loop_devices if s.source else 0,
    disk_space=lambda s: s.source.disk_space if s.source else 0,
    on_count=(0, 1),
    tools=("exportfs", "rpc.nfsd", "rpc.mountd", "rpcbind"),
    # Its own disk's filesystem; mount_options (read by parse_fs too) is in FIELDS.
    fields=(*FIELDS, *OWN_DISK_FIELDS, *fs_fields()[:2]),
)
