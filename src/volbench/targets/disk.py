"""A filesystem made directly on a disk you list (seed 000's "xfs directly on a disk").

    - {name: plain-xfs, type: disk, device: /dev/disk/by-id/virtio-d1, fs: xfs}
    - {name: raw, type: disk, device: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4, fs: none,
       wipe: true}

The disk passes the device guard first (guard.py, docs/safety.md); `fs: none`
hands the raw device to the workloads. Without spare disks use `loopdisk`, or
the lab VM, whose disks are /dev/disk/by-id/virtio-NAME.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from volbench.config.fields import Reader
from volbench.config.limits import Limits
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
    disk = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir)[0]
    info: dict[str, object] = {"fs": spec.fs.fs, "disk": disk.as_info()}
    yield present(ctx, spec, spec.fs, disk.device, [disk.device], info)


KIND = TargetKind(
    "disk",
    "a filesystem (or nothing) directly on one listed disk, guarded",
    parse,
    build,
    tools=("wipefs", "mkfs.xfs", "mkfs.ext4"),
    fields=(DEVICE, *SOURCE.fields(), *fs_fields()),
)
