"""Which external tool comes from which Debian package, and what it enables.

One table, used by `proc.require` (missing tool -> fix-it message) and by
`volbench doctor`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from volbench.errors import ToolMissing

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass(frozen=True)
class Tool:
    name: str
    package: str
    purpose: str
    # Where Debian installs it when not on PATH (e.g. PostgreSQL's server binaries).
    extra_dirs: tuple[Path, ...] = ()


TOOLS: dict[str, Tool] = {t.name: t for t in [
    Tool("fio", "fio", "fio workloads"),
    Tool("losetup", "mount", "loop-device targets"),
    Tool("mkfs.xfs", "xfsprogs", "xfs filesystems"),
    Tool("mkfs.ext4", "e2fsprogs", "ext4 filesystems"),
    Tool("mkfs.btrfs", "btrfs-progs", "btrfs targets"),
    Tool("wipefs", "util-linux", "device signature checks"),
    Tool("blkid", "util-linux", "device signature checks"),
    Tool("lsblk", "util-linux", "device topology"),
    Tool("findmnt", "util-linux", "mount information"),
    Tool("pgbench", "postgresql-15", "pgbench workloads"),
    Tool("initdb", "postgresql-15", "pgbench workloads", (PG_BIN,)),
    Tool("pg_ctl", "postgresql-15", "pgbench workloads", (PG_BIN,)),
    Tool("postgres", "postgresql-15", "pgbench workloads", (PG_BIN,)),
    Tool("psql", "postgresql-client-15", "pgbench workloads", (PG_BIN,)),
    Tool("bonnie++", "bonnie++", "bonnie++ workloads"),
    Tool("hdparm", "hdparm", "hdparm workloads"),
    Tool("dd", "coreutils", "dd workloads"),
    Tool("git", "git", "the small-file real-world job"),
    Tool("runuser", "util-linux", "running PostgreSQL as its own user"),
    Tool("lvm", "lvm2", "LVM targets"),
    Tool("mdadm", "mdadm", "md RAID targets"),
    Tool("exportfs", "nfs-kernel-server", "NFS targets"),
    Tool("targetcli", "targetcli-fb", "iSCSI targets (LIO)"),
    Tool("tgtd", "tgt", "iSCSI targets (tgt)"),
    Tool("iscsiadm", "open-iscsi", "iSCSI initiators"),
    Tool("iscsid", "open-iscsi", "iSCSI initiators (the daemon)"),
    Tool("tgtadm", "tgt", "iSCSI targets (tgt)"),
    Tool("dbus-daemon", "dbus", "iSCSI targets (LIO: targetcli needs the system D-Bus)"),
    Tool("dmsetup", "dmsetup", "LVM targets (removing device-mapper leftovers)"),
    Tool("rpc.nfsd", "nfs-kernel-server", "NFS targets (the server)"),
    Tool("rpc.mountd", "nfs-kernel-server", "NFS targets (the server)"),
    Tool("rpc.statd", "nfs-common", "NFS targets (NFSv3 locks)"),
    Tool("mount.nfs", "nfs-common", "NFS targets (the client)"),
    Tool("rpcbind", "rpcbind", "NFS targets (the server)"),
    Tool("rpcinfo", "rpcbind", "NFS targets (checking the server)"),
    Tool("qemu-system-x86_64", "qemu-system-x86", "the lab VM"),
    Tool("busybox", "busybox-static", "the lab VM (virtme-ng needs a static busybox)"),
    Tool("file", "file", "the lab VM (virtme-ng checks busybox with it)"),
    Tool("depmod", "kmod", "the lab VM (module index of the lab kernel)"),
    Tool("apt-get", "apt", "the lab VM (downloads the lab kernel)"),
    Tool("apt-cache", "apt", "the lab VM (finds the lab kernel package)"),
    Tool("dpkg", "dpkg", "the lab VM (unpacks the lab kernel)"),
    Tool("fallocate", "util-linux", "thick image files (type: image)"),
    Tool("blockdev", "util-linux", "wiping listed disks (wipe: true)"),
    Tool("ip", "iproute2", "multi-host tests in network namespaces"),
    Tool("ssh", "openssh-client", "remote load hosts"),
    Tool("rsvg-convert", "librsvg2-bin", "PNG charts (volbench report --charts DIR --png)"),
]}


def find(name: str) -> str | None:
    """Path of a tool, looking also in its package's private directories."""
    found = shutil.which(name)
    if found:
        return found
    tool = TOOLS.get(name)
    for d in tool.extra_dirs if tool else ():
        candidate = d / name
        if candidate.exists():
            return str(candidate)
    return None


def require(name: str) -> str:
    """Path of a tool or ToolMissing saying which package to install."""
    found = find(name)
    if found:
        return found
    tool = TOOLS.get(name)
    raise ToolMissing(name, tool.package if tool else None, tool.purpose if tool else "")
