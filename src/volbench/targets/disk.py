"""A filesystem made directly on a disk you list (seed 000's "xfs directly on a disk").

    - {name: plain-xfs, type: disk, device: /dev/disk/by-id/virtio-d1, fs: xfs}
    - {name: raw, type: disk, device: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4, fs: none,
       wipe: true}

The disk passes the device guard first (guard.py, docs/safety.md); `fs: none`
hands the raw device to the workloads. Without spare disks use `loopdisk`, or
the lab VM, whose disks are /dev/disk/by-id/virtio-NAME.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.system.block import guard
from volbench.system.block.disks import (
    DEVICE,
    WIPE,
    DiskSource,
    ListedDisk,
    SourceRules,
    parse_source,
    provide,
    stable_problem,
)
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present


@dataclass(frozen=True)
class DiskSpec(TargetSpec):
    """A disk target as the experiment file gives it: the fields, read and checked."""

    source: DiskSource = DiskSource()
    fs: FsSpec = FsSpec("xfs")


# Listed disks only, exactly one.
SOURCE = SourceRules(maximum=1, allow_loop=False)


def parse(r: Reader, name: str, limits: Limits) -> DiskSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    if r.has(DEVICE.name):
        # `device: PATH` is the one-disk spelling of `devices: [PATH]`.
        path = r.get(DEVICE)
        wipe = r.get(WIPE)
        why = stable_problem(path) if path else None
        if why:
            r.problem("device", why)
        if r.has("devices"):
            r.raw("devices")
            r.problem("devices", "give either device: or devices:, not both")
        source = DiskSource((ListedDisk(path, wipe),), count=1)
    else:
        source = parse_source(r, SOURCE)
    return DiskSpec(name, "disk", limits, source=source, fs=parse_fs(r))


@contextmanager
def build(spec: DiskSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    disk = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir, ctx.redirect)[0]
    info: dict[str, object] = {"fs": spec.fs.fs, "disk": disk.as_info()}
    built = present(ctx, spec, spec.fs, disk.device, [disk.device], info)
    if built.path is None and disk.listed:
        built.refind = partial(refind, built, disk.listed)
    yield built


def refind(built: Built, listed: str) -> dict[str, str] | None:
    """The raw target's disk found again by the path it was listed as, before a run.

    A lab disk pulled and returned by a fault comes back as a new node (/dev/vdc, then
    /dev/vdq) under the same by-id link: the runs after it must use the new node, and only
    once it passes the device guard again, as at the build (mounted, partitioned, a
    member of md/LVM, swap: refused). Signatures are let through: what is on the disk now
    is the runs' own writes. Returns what moved, or None when the node is the same or the
    link is gone (a disk still pulled: the run is then refused by fiochecks)."""
    old = built.block_device
    if not os.path.exists(listed) or os.path.realpath(listed) == old:
        return None
    node = guard.check(listed, wipe=True).node
    built.block_device = node
    built.devices = [node if d == old else d for d in built.devices]
    return {"from": str(old), "to": node, "by": listed}


KIND = TargetKind(
    "disk",
    "a filesystem (or nothing) directly on one listed disk, guarded",
    parse,
    build,
    tools=("wipefs", "mkfs.xfs", "mkfs.ext4"),
    fields=(DEVICE, *SOURCE.fields(), *fs_fields()),
)
