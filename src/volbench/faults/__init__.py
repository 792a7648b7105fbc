"""Faults fired into a run on a schedule: one module per kind of stack (docs/faults.md).

`check.problems` refuses, before anything runs, a fault on a device or target the
experiment does not build or an action its target cannot take; `make_action` turns a
fault and the built target into an Action whose commands are journalled before they run.
"""

from __future__ import annotations

from collections.abc import Mapping

from volbench.config.faults import FaultSpec
from volbench.faults import dm, iscsi, labdisk, loopdisk, md, nfs, thin, throttle
from volbench.faults.base import Action, FaultError, refuse_real_disk
from volbench.targets.base import Built, TargetSpec

# Action -> the target types it acts on (check.py refuses others before the run).
TARGET_TYPES = {
    "fail": ("mdraid",), "restore": ("mdraid", "iscsi"), "cut": ("iscsi",),
    "stop": ("nfs",), "start": ("nfs",),
    "delay": ("lvm",), "errors": ("lvm",), "heal": ("lvm",),
    "exhaust": ("lvm",), "free": ("lvm",),
}
# dm table faults act on an LV that is one linear stretch of one disk (dm.py).
DM_TABLE = ("delay", "errors", "heal")
# slow/return act on any target with limits: (its disk class's throttle, a cgroup cap),
# or on a lab disk named by device: (its class in QEMU, changed through QMP).
THROTTLED = ("slow", "return")
# What each action runs, as `volbench plan` and docs/faults.md show it.
COMMANDS = {
    "fail": "mdadm --fail ARRAY MEMBER; mdadm --remove ARRAY MEMBER",
    "restore": "mdadm --add ARRAY MEMBER (the rebuild starts); iSCSI: echo 1 > "
               "/sys/kernel/config/target/iscsi/IQN/tpgt_1/enable",
    "cut": "echo 0 > /sys/kernel/config/target/iscsi/IQN/tpgt_1/enable",
    "stop": "rpc.nfsd 0",
    "start": f"rpc.nfsd -G {nfs.GRACE_S} THREADS",
    "slow": "echo 'MAJ:MIN CAP*percent/100' > CGROUP/blkio.throttle.*_device (target:); "
            "QMP block_set_io_throttle DRIVE CAPS*percent/100 (device: a lab disk)",
    "return": "echo 'MAJ:MIN CAP' > CGROUP/blkio.throttle.*_device (target:); QMP "
              "block_set_io_throttle DEVICE CAPS (device: a lab disk), after a pull first "
              "blockdev-add IMAGE + device_add virtio-blk-pci serial=NAME at its slot; wait "
              "for /dev/disk/by-id/virtio-NAME; after a loopdisk's pull LOOP_SET_STATUS64 "
              "lo_offset=0, BLKROSET 0",
    "pull": "QMP device_del DEVICE (a lab disk; until QEMU has deleted it); wait until "
            "/dev/disk/by-id/virtio-NAME is gone; a loopdisk target (target:): BLKROSET 1 "
            "(writes refused), wait for the queued requests, LOOP_SET_STATUS64 "
            "lo_offset=IMAGE_SIZE (capacity 0), the image's size checked",
    "delay": "dmsetup suspend LV; dmsetup load LV --table '0 LEN delay MAJ:MIN OFFSET "
             "delay_ms'; dmsetup resume LV",
    "errors": "dmsetup suspend LV; dmsetup load LV --table '0 LEN flakey MAJ:MIN OFFSET 0 1'; "
              "dmsetup resume LV",
    "heal": "dmsetup suspend LV; dmsetup load LV --table 'its own table'; dmsetup resume LV",
    "exhaust": "echo SECONDS > /sys/module/dm_thin_pool/parameters/no_space_timeout (if "
               "given); lvcreate -V POOL_SIZE --thinpool VG/pool -n vbfill; lvchange "
               "--errorwhenfull y VG/pool; lvcreate -s VG/lv -n vbsnap; fio --name=fill "
               "(vbfill until the pool is full); lvchange --errorwhenfull y|n VG/pool",
    "free": "lvremove VG/vbfill VG/vbsnap; lvchange --refresh VG/pool; --errorwhenfull and "
            "no_space_timeout as they were",
    "power-cut": "before the run: each lab disk's state kept as its base (the host copies "
                 "its image), its dm table swapped to log-writes; at the cut: every disk "
                 "suspended, then an error table; the stack taken down; each image put back "
                 "to what its disk had made durable; the stack brought back (mdadm "
                 "--assemble, vgchange -ay, mount, fsck -n, exportfs, rpc.nfsd, PostgreSQL's "
                 "crash recovery); the probe's and pgbench's acknowledged writes counted "
                 "(docs/durability.md)",
}


def make_action(fault: FaultSpec, spec: TargetSpec, built: Built,
                peers: Mapping[str, Built] | None = None,
                caps: Mapping[str, Mapping[str, int]] | None = None) -> Action:
    """The action that starts `fault` on the built target `spec` names (FaultError when
    the built target cannot take it, e.g. an NFS server that was not volbench's);
    `peers`: every target built now; `caps`: the lab disks' caps by device (in the lab)."""
    refuse_real_disk(fault, spec)
    if fault.action == "fail":
        return md.fail(fault, built, caps)
    if fault.action == "cut":
        return iscsi.cut(fault, built)
    if fault.action == "stop":
        return nfs.stop(fault, built, peers or {})
    if fault.action == "slow" and labdisk.is_lab_disk(fault.device):
        return labdisk.slow(fault)
    if fault.action == "slow":
        return throttle.slow(fault, built, spec.limits.items())
    if fault.action == "pull" and spec.type == "loopdisk":
        return loopdisk.pull(fault, built)
    if fault.action == "pull":
        return labdisk.pull(fault, _pull_may_lose(spec, built), spec.type == "mdraid")
    if fault.action in ("delay", "errors"):
        return dm.start(fault, built)
    if fault.action == "exhaust":
        return thin.exhaust(fault, built)
    raise FaultError(f"'{fault.action}' ends a fault; it has no action of its own")


def _pull_may_lose(spec: TargetSpec, built: Built) -> str:
    """Why a pulled disk may cost data: an md member as md's level says; any other disk
    loses the writes it had not finished, and a filesystem on it may not survive."""
    if spec.type == "mdraid":
        return md.may_lose(str(built.info.get("level") or ""))
    return "the disk was pulled: writes it had not finished are lost"


__all__ = ["COMMANDS", "DM_TABLE", "Action", "FaultError", "dm", "iscsi", "labdisk",
           "loopdisk", "make_action", "md", "nfs", "thin", "throttle"]
