"""What every target (storage layout) provides, and what a workload sees of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.precondition import Precondition
from volbench.config.spec import Field
from volbench.system.block.filesystems import FsSpec, make_and_mount
from volbench.system.block.mounts import mount_info
from volbench.system.journal import Scope
from volbench.system.recipe import Recipe
from volbench.targets.precondition import discard_before_mkfs


@dataclass(frozen=True)
class TargetSpec:
    """Fields every target has; each type subclasses this with its own."""

    name: str
    type: str
    limits: Limits = Limits()
    # Targets this one is built on (an NFS export of an LV, an image on a filesystem …).
    on: tuple[str, ...] = ()
    # Discard and/or fill once the target is built (targets/precondition.py).
    precondition: Precondition = Precondition()


@dataclass
class Built:
    """A target that exists: where workloads put files, which devices carry them."""

    name: str
    type: str
    # Directory for file-based workloads (None for a raw block device target).
    path: Path | None
    # The block device the layout presents (what hdparm or raw fio would use).
    block_device: str | None = None
    # Leaf devices doing the I/O: throttled, watched in /proc/diskstats.
    devices: list[str] = field(default_factory=list)
    # cgroup the workload's processes join (disk-class throttling).
    cgroup: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)
    # Size of block_device in bytes, read once the target exists (workloads read no sysfs).
    device_bytes: int | None = None
    # Facts that change as runs write (a thin pool's data %), read before each run.
    probe: Callable[[], dict[str, Any]] | None = None
    # Finds the disk of a raw target again before each run (targets/disk.refind): what
    # moved ({"from", "to"}) or None.
    refind: Callable[[], dict[str, str] | None] | None = None


@dataclass
class BuildContext:
    """What a target's build is handed: the journal scope that records everything made,
    the recipe that shows it, a private work directory and the targets it is built on."""
    scope: Scope
    recipe: Recipe
    # A private directory for this target's images and mount points.
    workdir: Path
    # The built targets named in the spec's `on:`, by name.
    deps: dict[str, Built] = field(default_factory=dict)
    # What preconditioning did (discard, fill: devices, bytes, seconds), for the info.
    preconditioned: dict[str, Any] = field(default_factory=dict)
    # Listed disks used through another device (a lab disk wrapped for power cuts).
    redirect: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TargetKind:
    """One target type as the engine sees it: parse and build, plus what it needs (loop
    devices, disk space, root, tools, `on:` count) so a plan is checked before anything runs."""
    name: str
    summary: str
    parse: Callable[[Reader, str, Limits], TargetSpec]
    build: Callable[[Any, BuildContext], AbstractContextManager[Built]]
    # How many loop devices the target will attach (the host has only a few).
    loop_devices: Callable[[Any], int] = lambda spec: 0
    # Bytes of image files it will create under the work directory.
    disk_space: Callable[[Any], int] = lambda spec: 0
    needs_root: bool = True
    tools: tuple[str, ...] = ()
    # How many targets it may be built on (`on:`): (minimum, maximum).
    on_count: tuple[int, int] = (0, 0)
    # The type's own fields, declared once (config/spec.py): read by `parse`, checked by
    # the docs test against docs/layouts.md.
    fields: tuple[Field[Any], ...] = ()


def present(ctx: BuildContext, spec: TargetSpec, fs: FsSpec, device: str, devices: list[str],
            info: dict[str, Any]) -> Built:
    """The Built of a layout that ends in one block device: formatted and mounted, or the
    raw device itself (fs: none). A discard the spec asks for comes first."""
    discard_before_mkfs(ctx, spec, [device])
    if not fs.mounted:
        return Built(spec.name, spec.type, path=None, block_device=device, devices=devices,
                     info=info)
    mnt = make_and_mount(ctx.scope, ctx.recipe, fs, [device], ctx.workdir / "mnt")
    info["mount"] = mount_info(mnt)
    return Built(spec.name, spec.type, path=mnt, block_device=device, devices=devices, info=info)
