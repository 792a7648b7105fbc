"""A compressed RAM disk (zram). Results depend on how compressible the data is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Size, Text
from volbench.system.block.devices import create_zram
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present


@dataclass(frozen=True)
class ZramSpec(TargetSpec):
    """A zram target as the experiment file gives it: the fields, read and checked."""

    size: int = 0
    algorithm: str | None = None
    fs: FsSpec = FsSpec("ext4")


SIZE = Size("size", "512M", help="the RAM disk's size")
ALGORITHM = Text("algorithm", "", help="compression algorithm (default: the kernel's)")


def parse(r: Reader, name: str, limits: Limits) -> ZramSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    algorithm = r.get(ALGORITHM) or None
    return ZramSpec(name, "zram", limits, size=r.get(SIZE), algorithm=algorithm,
                    fs=parse_fs(r, default="ext4"))


@contextmanager
def build(spec: ZramSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    device = create_zram(ctx.scope, ctx.recipe, spec.size, spec.algorithm)
    info: dict[str, object] = {"fs": spec.fs.fs, "size": spec.size,
                               "note": "data compressibility decides zram's speed"}
    yield present(ctx, spec, spec.fs, device, [device], info)


KIND = TargetKind("zram", "a compressed RAM disk", parse, build, tools=("mkfs.ext4",),
                  fields=(SIZE, ALGORITHM, *fs_fields("ext4")))
