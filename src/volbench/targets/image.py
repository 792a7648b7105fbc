"""A disk image file on a filesystem, attached as a loop disk (seed 003's datastores).

    - {name: thick, type: image, size: 2G, allocation: thick}
    - {name: thin, type: image, size: 2G, allocation: thin, dir: /srv/datastore}
    - {name: store, type: disk, device: /dev/disk/by-id/virtio-d1, fs: xfs}
    - {name: thin-on-store, type: image, allocation: thin, on: [store]}

`allocation`: `thin` is a sparse file (blocks are allocated on first write, as a
thin datastore disk), `thick` is preallocated with fallocate (allocated but
unwritten extents: VMware's lazy-zeroed thick), `eager` is preallocated and then
written with zeros (eager-zeroed thick: no first-write cost left).

Where the image lives: on the mount of the target named in `on:` (built first,
torn down last), or in an existing directory `dir:`, or by default in the
target's own work directory. Each image gets a private folder there, removed at
teardown, so no file of the user's is ever overwritten. The image is attached
with direct I/O, so the filesystem under it must support O_DIRECT (not tmpfs).
`fs: none` gives the raw loop device to the workloads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Location, Size, Text
from volbench.core import units
from volbench.core.errors import ResourceError
from volbench.system.block.devices import attach_loop, create_image
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.system.block.mounts import make_tree, mount_info
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present

ALLOCATIONS = ("thin", "thick", "eager")


@dataclass(frozen=True)
class ImageSpec(TargetSpec):
    """An image target as the experiment file gives it: the fields, read and checked."""

    size: int = 1024**3
    allocation: str = "thin"
    # An existing directory for the image (None: the target named in `on:`, or workdir).
    dir: Path | None = None
    fs: FsSpec = FsSpec("xfs")


SIZE = Size("size", "1G", help="size of the image, at least 16M")
ALLOCATION = Text("allocation", "thin", choices=ALLOCATIONS,
                  help="thin (sparse), thick (fallocate) or eager (written with zeros)")
DIR = Location("dir", None, help="an existing directory for the image (instead of on:)")


def parse(r: Reader, name: str, limits: Limits) -> ImageSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    size = r.get(SIZE)
    if r.has("size") and size < 16 * 1024**2:
        r.problem("size", "must be at least 16M")
    directory = None
    if r.has("dir"):
        directory = r.get(DIR)
        if not directory.is_dir():
            r.problem(
                "dir",
                f"{directory} is not an existing directory",
                "create it, or put the image on another target with on: [NAME]",
            )
        if r.has("on"):
            r.problem("dir", "give either dir: or on:, not both")
    return ImageSpec(
        name,
        "image",
        limits,
        size=size,
        allocation=r.get(ALLOCATION),
        dir=directory,
        fs=parse_fs(r),
    )


def allocated_bytes(path: Path) -> int:
    """Bytes the filesystem has really allocated to a file (sparse files: fewer than size)."""
    return os.stat(path).st_blocks * 512


def _make_image(spec: ImageSpec, ctx: BuildContext, path: Path) -> Path:
    image = create_image(
        ctx.scope, ctx.recipe, path, spec.size, preallocate=spec.allocation != "thin"
    )
    if spec.allocation == "eager":
        mib = spec.size // 1024**2
        ctx.recipe.run(
            [
                "dd",
                "if=/dev/zero",
                f"of={image}",
                "bs=1M",
                f"count={mib}",
                "oflag=direct",
                "conv=notrunc,fsync",
                "status=none",
            ],
            timeout=max(600, mib / 10),
        )
    return image


def _holder(spec: ImageSpec, ctx: BuildContext) -> tuple[Path, dict[str, Any]]:
    """The directory that will hold the image, and what it belongs to."""
    if not spec.on:
        return (spec.dir.resolve() if spec.dir else ctx.workdir), {}
    base = ctx.deps[spec.on[0]]
    if base.path is None:
        raise ResourceError(
            f"target {spec.name}: {base.name} ({base.type}) has no filesystem "
            f"to hold the image; give {base.name} a filesystem (fs: xfs)"
        )
    return base.path, {"target": base.name, "type": base.type, "devices": base.devices}


@contextmanager
def build(spec: ImageSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    base, on_info = _holder(spec, ctx)
    # A folder of our own: never overwrite, nor leave behind, a file of the user's.
    folder = make_tree(ctx.scope, base / f"volbench-image-{spec.name}-{os.getpid()}")
    image = _make_image(spec, ctx, folder / "disk.img")
    allocated = allocated_bytes(image)
    device = attach_loop(ctx.scope, ctx.recipe, image)
    info: dict[str, Any] = {
        "image": str(image),
        "allocation": spec.allocation,
        "size": spec.size,
        "allocated_bytes": allocated,
        "allocated": f"{units.format_size(allocated)} of {units.format_size(spec.size)}",
        "holder": mount_info(base),
        "fs": spec.fs.fs,
    }
    if on_info:
        info["on"] = on_info
    yield present(ctx, spec, spec.fs, device, [device], info)


def _space(spec: ImageSpec) -> int:
    # Thin images grow as written: count them whole, so a full write still fits.
    return spec.size if spec.dir is None and not spec.on else 0


KIND = TargetKind(
    "image",
    "a disk image file (thin, thick or eager) on a directory or on "
    "another target, attached as a loop disk",
    parse,
    build,
    loop_devices=lambda s: 1,
    disk_space=_space,
    on_count=(0, 1),
    tools=("losetup", "fallocate", "dd", "mkfs.xfs", "mkfs.ext4"),
    fields=(SIZE, ALLOCATION, DIR, *fs_fields()),
)
