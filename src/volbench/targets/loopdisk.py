"""A file-backed disk: an image file on a loop device with direct I/O, formatted and mounted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from volbench.cgroups import Limits
from volbench.devices import attach_loop, create_image
from volbench.fields import Reader
from volbench.filesystems import FsSpec, make_and_mount, parse_fs
from volbench.mounts import mount_info
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec


@dataclass(frozen=True)
class LoopdiskSpec(TargetSpec):
    size: int = 0
    fs: FsSpec = FsSpec("xfs")
    preallocate: bool = False


def parse(r: Reader, name: str, limits: Limits) -> LoopdiskSpec:
    disks = r.integer("disks", 1, minimum=1)
    if disks > 1:
        r.problem("disks", "a loopdisk is one disk",
                  "use type: btrfs to combine disks here, or lvm/mdraid in the lab")
    size = r.size("size", "1G")
    if r.has("size") and size < 64 * 1024**2:
        r.problem("size", "must be at least 64M (xfs and btrfs need room for metadata)")
    return LoopdiskSpec(name, "loopdisk", limits, size=size, fs=parse_fs(r),
                        preallocate=r.boolean("preallocate", False))


@contextmanager
def build(spec: LoopdiskSpec, ctx: BuildContext) -> Iterator[Built]:
    image = create_image(ctx.scope, ctx.recipe, ctx.workdir / "disk0.img", spec.size,
                         preallocate=spec.preallocate)
    device = attach_loop(ctx.scope, ctx.recipe, image)
    info: dict[str, object] = {"fs": spec.fs.fs, "image": str(image), "size": spec.size}
    if not spec.fs.mounted:
        yield Built(spec.name, spec.type, path=None, block_device=device, devices=[device],
                    info=info)
        return
    mnt = make_and_mount(ctx.scope, ctx.recipe, spec.fs, [device], ctx.workdir / "mnt")
    info["mount"] = mount_info(mnt)
    yield Built(spec.name, spec.type, path=mnt, block_device=device, devices=[device], info=info)


KIND = TargetKind("loopdisk", "one file-backed loop disk (direct I/O), formatted and mounted",
                  parse, build, loop_devices=lambda s: 1, disk_space=lambda s: s.size,
                  tools=("losetup", "mkfs.xfs", "mkfs.ext4"))
