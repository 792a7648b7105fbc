"""An existing directory or mount: no root needed, nothing formatted.

volbench works in a private subdirectory it creates (and removes with its
contents), so files of its own never mix with the user's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Location
from volbench.system.block.mounts import make_tree, mount_info
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec


@dataclass(frozen=True)
class DirectorySpec(TargetSpec):
    """A directory target as the experiment file gives it: the fields, read and checked."""

    path: Path = Path(".")


PATH = Location("path", help="an existing directory volbench writes its files in")


def parse(r: Reader, name: str, limits: Limits) -> DirectorySpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    path = r.get(PATH)
    if r.has("path") and not path.is_dir():
        r.problem("path", f"{path} is not an existing directory",
                  "create it first or point to a mounted filesystem")
    return DirectorySpec(name, "directory", limits, path=path)


@contextmanager
def build(spec: DirectorySpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    private = spec.path.resolve() / f".volbench-{os.getpid()}-{int(time.time())}"
    make_tree(ctx.scope, private)
    ctx.recipe.note(f"work in a private directory {private}, removed afterwards")
    device = _backing_device(spec.path)
    info = {"mount": mount_info(spec.path)}
    yield Built(spec.name, spec.type, path=private, devices=[device] if device else [],
                info=info)


def _backing_device(path: Path) -> str | None:
    """The block device holding `path`, if it is one (for diskstats and limits)."""
    st = os.stat(path)
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not link.exists():
        return None  # tmpfs, overlay, NFS …: no block device
    return f"/dev/{link.resolve().name}"


KIND = TargetKind("directory", "an existing directory (nothing is formatted)", parse, build,
                  needs_root=False, fields=(PATH,))
