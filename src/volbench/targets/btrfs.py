"""btrfs over several loop disks: data profile single or raid0 (and raid1).

Note (MACHINE-NOTES): `-d single` allocates 1 GiB chunks on the emptiest device,
so it is *not* like LVM linear: only a file smaller than one chunk stays on one
device. `-d raid0` stripes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Field, Integer, Size, Text, TextList
from volbench.system.block.devices import attach_loop, create_image
from volbench.system.block.filesystems import FsSpec, make_and_mount
from volbench.system.block.mounts import mount_info
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec
from volbench.targets.precondition import discard_before_mkfs

PROFILES = ("single", "raid0", "raid1", "raid10", "dup")


@dataclass(frozen=True)
class BtrfsSpec(TargetSpec):
    """A btrfs target as the experiment file gives it: the fields, read and checked."""

    disks: int = 2
    size: int = 0
    data: str = "single"
    metadata: str = "raid1"
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()


DISKS = Integer("disks", 2, minimum=1, maximum=8, help="loop disks in the filesystem")
DATA = Text("data", "single", choices=PROFILES, help="btrfs data profile (mkfs.btrfs -d)")
METADATA = Text("metadata", None, choices=PROFILES,
                help="btrfs metadata profile (-m); default raid1 with several disks, else dup")
SIZE = Size("size", "1G", help="size of each disk")
MOUNT_OPTIONS = TextList("mount_options", [], help="mount -o options")
MKFS_OPTIONS = TextList("mkfs_options", [], help="more mkfs.btrfs arguments")
FIELDS: tuple[Field[Any], ...] = (DISKS, DATA, METADATA, SIZE, MOUNT_OPTIONS, MKFS_OPTIONS)


def parse(r: Reader, name: str, limits: Limits) -> BtrfsSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    disks = r.get(DISKS)
    data = r.get(DATA)
    metadata = r.get(METADATA.defaulting("raid1" if disks > 1 else "dup"))
    need = {"raid1": 2, "raid0": 2, "raid10": 4}
    for key, profile in (("data", data), ("metadata", metadata)):
        if disks < need.get(profile, 1):
            r.problem(key, f"profile {profile} needs at least {need[profile]} disks, "
                           f"this target has {disks}", "add disks or choose single")
    return BtrfsSpec(name, "btrfs", limits, disks=disks, size=r.get(SIZE),
                     data=data, metadata=metadata,
                     mount_options=tuple(r.get(MOUNT_OPTIONS)),
                     mkfs_options=tuple(r.get(MKFS_OPTIONS)))


@contextmanager
def build(spec: BtrfsSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    devices = []
    for i in range(spec.disks):
        image = create_image(ctx.scope, ctx.recipe, ctx.workdir / f"disk{i}.img", spec.size)
        devices.append(attach_loop(ctx.scope, ctx.recipe, image))
    fs = FsSpec("btrfs", spec.mkfs_options, spec.mount_options)
    profiles = ("-d", spec.data, "-m", spec.metadata)
    discard_before_mkfs(ctx, spec, devices)
    mnt = make_and_mount(ctx.scope, ctx.recipe, fs, devices, ctx.workdir / "mnt", profiles)
    info = {"fs": "btrfs", "data": spec.data, "metadata": spec.metadata,
            "mount": mount_info(mnt)}
    yield Built(spec.name, spec.type, path=mnt, block_device=devices[0], devices=devices,
                info=info)


KIND = TargetKind("btrfs", "btrfs over several loop disks (data single/raid0/raid1)",
                  parse, build, loop_devices=lambda s: s.disks,
                  disk_space=lambda s: s.disks * s.size, tools=("losetup", "mkfs.btrfs"),
                  fields=FIELDS)
