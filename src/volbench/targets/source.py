"""Where a stacked target's storage comes from: another target (`on:`) or a disk of its own.

Shared by the targets that export or serve storage (NFS, iSCSI).
"""

from __future__ import annotations

from volbench.config.fields import Reader
from volbench.system.block.disks import DiskSource, ListedDisk, parse_source, stable_problem


def parse_own_disk(r: Reader) -> DiskSource | None:
    """`device:` / `devices:` / `disks:` for a target that may also be built `on:` another."""
    if r.has("on"):
        for key in ("device", "devices", "disks"):
            if r.has(key):
                r.raw(key)
                r.problem(key, "give either on: or a disk of its own, not both")
        return None
    if r.has("device"):
        path = r.text("device")
        why = stable_problem(path) if path else None
        if why:
            r.problem("device", why)
        return DiskSource((ListedDisk(path, r.boolean("wipe", False)),), count=1)
    return parse_source(r, minimum=1, maximum=1)
