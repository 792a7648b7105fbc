"""Which external tool comes from which Debian package, and what it enables.

One table, used by `proc.require` (missing tool -> fix-it message), by `volbench
doctor` and by `volbench doctor FILE` (which names the `scripts/setup --with GROUP`
that installs what an experiment lacks). PostgreSQL's programs are found by pgfind
(they are not on PATH on most distributions).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from volbench.core.errors import ToolMissing
from volbench.system.host import pgfind

# scripts/setup's package groups (`--with GROUP`); "base" is always installed.
GROUPS = ("base", "pgbench", "bonnie", "lab", "png", "multihost")


@dataclass(frozen=True)
class Tool:
    name: str
    package: str
    purpose: str
    # The scripts/setup group that installs the package.
    group: str = "base"


TOOLS: dict[str, Tool] = {t.name: t for t in [
    Tool("fio", "fio", "fio workloads"),
    Tool("losetup", "mount", "loop-device targets"),
    Tool("mkfs.xfs", "xfsprogs", "xfs filesystems"),
    Tool("mkfs.ext4", "e2fsprogs", "ext4 filesystems"),
    Tool("mkfs.btrfs", "btrfs-progs", "btrfs targets"),
    Tool("wipefs", "util-linux", "device signature checks"),
    Tool("blkid", "util-linux", "device signature checks"),
    Tool("blkdiscard", "util-linux", "precondition: discard"),
    Tool("lsblk", "util-linux", "device topology"),
    Tool("findmnt", "util-linux", "mount information"),
    Tool("pgbench", "postgresql", "pgbench workloads", "pgbench"),
    Tool("initdb", "postgresql", "pgbench workloads", "pgbench"),
    Tool("pg_ctl", "postgresql", "pgbench workloads", "pgbench"),
    Tool("postgres", "postgresql", "pgbench workloads", "pgbench"),
    Tool("psql", "postgresql", "pgbench workloads", "pgbench"),
    Tool("bonnie++", "bonnie++", "bonnie++ workloads", "bonnie"),
    Tool("hdparm", "hdparm", "hdparm workloads"),
    Tool("dd", "coreutils", "dd workloads"),
    Tool("git", "git", "the small-file real-world job"),
    Tool("runuser", "util-linux", "running PostgreSQL as its own user"),
    Tool("bwrap", "bubblewrap", "the sandbox tools without root run in (pgbench)"),
    Tool("setpriv", "util-linux", "the sandbox's unprivileged user"),
    Tool("prlimit", "util-linux", "the sandbox's process limit"),
    Tool("useradd", "passwd", "the sandbox's unprivileged user (made per run)"),
    Tool("userdel", "passwd", "the sandbox's unprivileged user (removed after the run)"),
    Tool("lvm", "lvm2", "LVM targets", "lab"),
    Tool("mdadm", "mdadm", "md RAID targets", "lab"),
    Tool("exportfs", "nfs-kernel-server", "NFS targets", "lab"),
    Tool("targetcli", "targetcli-fb", "iSCSI targets (LIO)", "lab"),
    Tool("tgtd", "tgt", "iSCSI targets (tgt)", "lab"),
    Tool("iscsiadm", "open-iscsi", "iSCSI initiators", "lab"),
    Tool("iscsid", "open-iscsi", "iSCSI initiators (the daemon)", "lab"),
    Tool("tgtadm", "tgt", "iSCSI targets (tgt)", "lab"),
    Tool("dbus-daemon", "dbus", "iSCSI targets (LIO: targetcli needs the system D-Bus)", "lab"),
    Tool("dmsetup", "dmsetup", "LVM targets (removing device-mapper leftovers)", "lab"),
    Tool("rpc.nfsd", "nfs-kernel-server", "NFS targets (the server)", "lab"),
    Tool("rpc.mountd", "nfs-kernel-server", "NFS targets (the server)", "lab"),
    Tool("rpc.statd", "nfs-common", "NFS targets (NFSv3 locks)", "lab"),
    Tool("mount.nfs", "nfs-common", "NFS targets (the client)", "lab"),
    Tool("rpcbind", "rpcbind", "NFS targets (the server)", "lab"),
    Tool("rpcinfo", "rpcbind", "NFS targets (checking the server)", "lab"),
    Tool("qemu-system-x86_64", "qemu-system-x86", "the lab VM", "lab"),
    Tool("busybox", "busybox-static", "the lab VM (virtme-ng needs a static busybox)", "lab"),
    Tool("file", "file", "the lab VM (virtme-ng checks busybox with it)", "lab"),
    Tool("depmod", "kmod", "the lab VM (module index of the lab kernel)", "lab"),
    Tool("apt-get", "apt", "the lab VM (downloads the lab kernel)"),
    Tool("apt-cache", "apt", "the lab VM (finds the lab kernel package)"),
    Tool("dpkg", "dpkg", "the lab VM (unpacks the lab kernel)"),
    Tool("fallocate", "util-linux", "thick image files (type: image)"),
    Tool("blockdev", "util-linux", "wiping listed disks (wipe: true)"),
    Tool("ip", "iproute2", "multi-host tests in network namespaces", "multihost"),
    Tool("ssh", "openssh-client", "remote load hosts", "multihost"),
    Tool("rsvg-convert", "librsvg2-bin", "PNG charts (volbench report --charts DIR --png)",
         "png"),
]}


def find(name: str) -> str | None:
    """Path of a tool (PostgreSQL's programs: of the installation pgfind picks)."""
    if name in pgfind.PROGRAMS:
        return pgfind.find_program(name)
    return shutil.which(name)


def require(name: str) -> str:
    """Path of a tool or ToolMissing saying which package to install."""
    if name in pgfind.PROGRAMS:
        return pgfind.locate().program(name)
    found = find(name)
    if found:
        return found
    tool = TOOLS.get(name)
    raise ToolMissing(name, tool.package if tool else None, tool.purpose if tool else "")
