"""Targets: one module per storage layout; `open_target` adds what all share.

Every target is a context manager that builds the layout and always tears it
down; `open_target` adds disk-class limits (blkio throttling) and the topology
record on top of any of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from volbench import cgroups
from volbench.devices import topology
from volbench.errors import ResourceError
from volbench.targets import btrfs, directory, loopdisk, zram
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec

KINDS: dict[str, TargetKind] = {k.name: k for k in (
    directory.KIND, loopdisk.KIND, btrfs.KIND, zram.KIND,
)}


@contextmanager
def open_target(spec: TargetSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build `spec`, throttle it if it has limits, record its topology; tear down after."""
    kind = KINDS[spec.type]
    with ctx.scope, kind.build(spec, ctx) as built:
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
        built.info["topology"] = topology(built.devices)
        built.info["recipe"] = list(ctx.recipe.steps)
        yield built


__all__ = ["KINDS", "BuildContext", "Built", "TargetSpec", "open_target"]
