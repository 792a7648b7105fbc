"""Where a stacked target's storage comes from: another target (`on:`) or a disk of its own.

Shared by the targets that export or serve storage (NFS, iSCSI).
"""

from __future__ import annotations

from typing import Any

from volbench.config.fields import Reader
from volbench.config.spec import Field
from volbench.system.block.disks import (
    DEVICE,
    WIPE,
    DiskSource,
    ListedDisk,
    SourceRules,
    parse_source,
    stable_problem,
)

# A disk of its own is one disk: listed, or one fresh loop disk.
OWN_DISK = SourceRules(maximum=1)
FIELDS: tuple[Field[Any], ...] = (DEVICE, *OWN_DISK.fields())


def parse_own_disk(r: Reader) -> DiskSource | None:
    """`device:` / `devices:` / `disks:` for a target that may also be built `on:` another."""
    if r.has("on"):
        for key in ("device", "devices", "disks"):
            if r.has(key):
                r.raw(key)
                r.problem(key, "give either on: or a disk of its own, not both")
        return None
    if r.has(DEVICE.name):
        path = r.get(DEVICE)
        why = stable_problem(path) if path else None
        if why:
            r.problem("device", why)
        return DiskSource((ListedDisk(path, r.get(WIPE)),), count=1)
    return parse_source(r, OWN_DISK)
