"""A file-backed disk: an image file on a loop device with direct I/O, formatted and mounted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Boolean, Integer, Size
from volbench.system.block.devices import attach_loop, create_image
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present

# mkfs refuses smaller devices (xfsprogs 6: "Filesystem must be larger than 300MB").
MIN_SIZE = {"xfs": 300 * 2**20, "ext4": 16 * 2**20, "btrfs": 128 * 2**20}


@dataclass(frozen=True)
class LoopdiskSpec(TargetSpec):
    """A loopdisk target as the experiment file gives it: the fields, read and checked."""

    size: int = 0
    fs: FsSpec = FsSpec("xfs")
    preallocate: bool = False


# `disks` is read only to refuse more than one with a pointer to the targets that combine them.
DISKS = Integer("disks", 1, minimum=1, help="always 1")
SIZE = Size("size", "1G", help="size of the disk image")
PREALLOCATE = Boolean("preallocate", False, help="write the image fully before use")


def parse(r: Reader, name: str, limits: Limits) -> LoopdiskSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    disks = r.get(DISKS)
    if disks > 1:
        r.problem("disks", "a loopdisk is one disk",
                  "use type: btrfs to combine disks here, or lvm/mdraid in the lab")
    size = r.get(SIZE)
    fs = parse_fs(r)
    minimum = MIN_SIZE.get(fs.fs, 0)
    if size < minimum:
        r.problem("size", f"{fs.fs} needs a disk of at least {minimum // 2**20}M, got "
                          f"{size // 2**20}M", "give a larger size")
    return LoopdiskSpec(name, "loopdisk", limits, size=size, fs=fs,
                        preallocate=r.get(PREALLOCATE))


@contextmanager
def build(spec: LoopdiskSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    image = create_image(ctx.scope, ctx.recipe, ctx.workdir / "disk0.img", spec.size,
                         preallocate=spec.preallocate)
    device = attach_loop(ctx.scope, ctx.recipe, image)
    info: dict[str, object] = {"fs": spec.fs.fs, "image": str(image), "size": spec.size}
    yield present(ctx, spec, spec.fs, device, [device], info)


KIND = TargetKind("loopdisk", "one file-backed loop disk (direct I/O), formatted and mounted",
                  parse, build, loop_devices=lambda s: 1, disk_space=lambda s: s.size,
                  tools=("losetup", "mkfs.xfs", "mkfs.ext4"),
                  fields=(DISKS, SIZE, PREALLOCATE, *fs_fields()))
