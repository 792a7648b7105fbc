"""Targets: one module per storage layout; `open_target` adds what all share.

Every target is a context manager that builds the layout and always tears it
down; `open_target` adds disk-class limits (blkio throttling) and the topology
record on top of any of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from volbench.core.errors import ResourceError
from volbench.core.registry import LazyKinds
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec

# A layout's module is imported the first time its type is looked up (core/registry.py).
KINDS: LazyKinds[TargetKind] = LazyKinds({
    "directory": "volbench.targets.directory:KIND",
    "loopdisk": "volbench.targets.loopdisk:KIND",
    "btrfs": "volbench.targets.btrfs:KIND",
    "zram": "volbench.targets.zram:KIND",
    "disk": "volbench.targets.disk:KIND",
    "image": "volbench.targets.image:KIND",
    "hosts": "volbench.targets.multihost:KIND",
    # storage stacks (the lab VM): lvm, mdraid, nfs, iscsi
    "lvm": "volbench.targets.lvm:KIND",
    "mdraid": "volbench.targets.mdraid:KIND",
    "nfs": "volbench.targets.nfs:KIND",
    "iscsi": "volbench.targets.iscsi:KIND",
})


@contextmanager
def open_target(spec: TargetSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build `spec`, precondition it, throttle it if it has limits, record its state and
    topology; tear down after."""
    from volbench.system.block import cgroups
    from volbench.system.block.devices import device_bytes, topology, write_cache_modes
    from volbench.targets import precondition

    kind = KINDS[spec.type]
    with ctx.scope, kind.build(spec, ctx) as built:
        # Before the throttle exists: preconditioning runs at the device's own speed.
        precondition.fill(ctx, spec, built)
        built.info["state"] = {**precondition.state(spec, ctx.deps, ctx.preconditioned),
                               **precondition.probed(built)}
        if spec.limits:
            if not built.devices:
                raise ResourceError(
                    f"target {spec.name}: limits need a block device, and this target has none")
            built.cgroup = cgroups.make_throttle(ctx.scope, ctx.recipe, spec.name,
                                                 built.devices, spec.limits)
            built.info["limits"] = {
                **dict(spec.limits.items()),
                "enforced_by": "cgroup v1 blkio throttle on "
                               + ", ".join(built.devices) + " (workload processes join it)",
                "caveat": "buffered writeback by kernel flusher threads is not throttled",
            }
        if built.block_device is not None:
            built.device_bytes = device_bytes(built.block_device)
        built.info["topology"] = topology(built.devices)
        built.info["write_cache"] = write_cache_modes(built.devices)
        built.info["recipe"] = list(ctx.recipe.steps)
        yield built


def placeholder(spec: TargetSpec) -> Built:
    """What `volbench plan` shows a workload instead of a built target: a directory,
    or only a device for targets that carry no filesystem (fs: none)."""
    from volbench.system.block.filesystems import FsSpec

    fs = getattr(spec, "fs", None)
    raw = isinstance(fs, FsSpec) and not fs.mounted
    return Built(spec.name, spec.type, path=None if raw else Path(f"<{spec.name}>"),
                 block_device=f"<{spec.name}-device>")


__all__ = ["KINDS", "BuildContext", "Built", "TargetSpec", "open_target", "placeholder"]
