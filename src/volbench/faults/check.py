"""Faults checked against the experiment before anything runs (docs/faults.md).

A fault names a target of the experiment (`target:`) or a disk one of its targets lists
(`device:`); its action must fit that target's type; a disk that is not a fresh image
(a listed real disk) takes a fault only in the lab or with `wipe: true` on that disk.
"""

from __future__ import annotations

from collections.abc import Sequence

from volbench.config.faults import POWER_CUT, FaultSpec
from volbench.config.fields import did_you_mean
from volbench.core.errors import Problem
from volbench.faults import DM_TABLE, TARGET_TYPES, THROTTLED
from volbench.faults.base import listed_disks
from volbench.faults.labdisk import is_lab_disk
from volbench.system.host.hostinfo import inside_lab
from volbench.targets.base import TargetSpec
from volbench.workloads.base import WorkloadSpec


def concerned(fault: FaultSpec, targets: Sequence[TargetSpec]) -> TargetSpec | None:
    """The target a fault acts on: the one it names, or the one listing its device."""
    for spec in targets:
        if fault.target == spec.name or any(d.path == fault.device for d in listed_disks(spec)):
            return spec
    return None


def problems(targets: Sequence[TargetSpec], workloads: Sequence[WorkloadSpec],
             lab_disks: Sequence[str] = ()) -> list[Problem]:
    """Every fault of every workload that names nothing built here or cannot act on it.
    `lab_disks`: the lab's disks (by-id paths), which `volbench lab run` gives the VM
    (a plain run refuses a fault on them again when it acts, outside the lab)."""
    found: list[Problem] = []
    for w, workload in enumerate(workloads):
        for i, fault in enumerate(workload.faults):
            if fault.action == POWER_CUT:  # names nothing: faults/powercheck.py
                continue
            where = f"workloads[{w}].faults[{i}]"
            found += _fault_problems(where, fault, targets, inside_lab() or
                                     fault.device in lab_disks)
    return found


def _fault_problems(where: str, fault: FaultSpec, targets: Sequence[TargetSpec],
                    in_lab: bool) -> list[Problem]:
    spec = concerned(fault, targets)
    if spec is None:
        return [_unknown(where, fault, targets)]
    field = "device" if fault.device else "target"
    if fault.action == "pull":
        return _pull_problems(where, fault, spec, in_lab)
    if fault.action in THROTTLED:
        if is_lab_disk(fault.device) and in_lab:
            return []  # its class's throttle lives in QEMU: changed through QMP
        if not spec.limits:
            return [Problem(f"{where}.action", f"'{fault.action}' cuts the disk class of target "
                            f"{spec.name}, which has no limits:",
                            "give the target limits: (e.g. read_iops: 500), or fault another")]
        return []
    types = TARGET_TYPES.get(fault.action, ())
    if spec.type not in types:
        return [Problem(f"{where}.action", f"'{fault.action}' acts on a target of type "
                        f"{'/'.join(types)}, and {fault.names} is type {spec.type}",
                        f"name a {'/'.join(types)} target or a disk it lists ({field}:)")]
    source = getattr(spec, "source", None)
    if fault.action in DM_TABLE and (getattr(spec, "layout", "linear") != "linear"
                                     or (source is not None and source.n > 1)):
        return [Problem(f"{where}.action", f"'{fault.action}' swaps the dm table of an LV that "
                        f"is one linear stretch of one disk; target {spec.name} is not",
                        "give the lvm target layout: linear and one device")]
    if fault.action in ("exhaust", "free") and getattr(spec, "layout", "") != "thin":
        return [Problem(f"{where}.action", f"'{fault.action}' fills the thin pool of a thin "
                        f"volume; target {spec.name} is not one",
                        "give the lvm target layout: thin")]
    if fault.action in ("fail", "restore") and spec.type == "mdraid" and fault.device is None:
        return [Problem(f"{where}.target", "a member fault names the member disk",
                        "give device: (one of the disks the md target lists)")]
    disk = next((d for d in listed_disks(spec) if d.path == fault.device), None)
    if disk is not None and not disk.wipe and not in_lab:
        return [Problem(f"{where}.device", f"{disk.path} is a real disk outside the lab; a fault "
                        "on it could cost its data",
                        "run it in the lab (volbench lab run), or set wipe: true on that disk")]
    return []


def _pull_problems(where: str, fault: FaultSpec, spec: TargetSpec,
                   in_lab: bool) -> list[Problem]:
    """`pull` takes a lab disk out of the running VM (QMP), or leaves a loopdisk target's
    disk with no capacity (faults/loopdisk.py); nothing else can vanish here."""
    if fault.target is not None and spec.type == "loopdisk":
        return []
    if fault.device is None:
        return [Problem(f"{where}.target", f"'pull' takes one disk out, and target "
                        f"{spec.name} is type {spec.type}",
                        "give device: (a lab disk a target lists, /dev/disk/by-id/virtio-NAME), "
                        "or name a loopdisk target")]
    if not is_lab_disk(fault.device):
        return [Problem(f"{where}.device", f"{fault.device} cannot be pulled: only a lab "
                        "disk or a loopdisk target's own disk can vanish from a running "
                        "system here",
                        "pull a lab disk in the lab (volbench lab run, device: "
                        "/dev/disk/by-id/virtio-NAME), or name a loopdisk target (target:)")]
    if not in_lab:
        return [Problem(f"{where}.device", f"pulling {fault.device} needs the lab VM, where "
                        "QEMU can take the disk out", "run it with volbench lab run")]
    return []


def _unknown(where: str, fault: FaultSpec, targets: Sequence[TargetSpec]) -> Problem:
    if fault.target is not None:
        names = [t.name for t in targets]
        return Problem(f"{where}.target", f"'{fault.target}' is not a target of this experiment",
                       did_you_mean(fault.target, names) or f"targets are: {', '.join(names)}")
    disks = [d.path for t in targets for d in listed_disks(t)]
    return Problem(f"{where}.device", f"{fault.device} is not a disk any target lists; a fault "
                   "acts only on what the experiment builds",
                   did_you_mean(str(fault.device), disks)
                   or (f"disks listed: {', '.join(disks)}" if disks else
                       "list the disk in a target (devices:), or name a target (target:)"))
