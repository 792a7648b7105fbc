"""md RAID 0/1/10 over listed disks or loop disks (mdadm).

    - {name: r0, type: mdraid, level: raid0, chunk_size: 64k,
       devices: [/dev/disk/by-id/virtio-d1, /dev/disk/by-id/virtio-d2]}
    - {name: r10, type: mdraid, level: raid10, layout: f2, devices: [… 4 disks …]}

The array is `/dev/md/vb_<name>_<pid>` (metadata 1.2), made with `--run` after
the device guard has passed every disk. Mirrors (raid1, raid10) are created with
`--assume-clean` by default: a fresh array's initial resync would otherwise read
and write every disk while the benchmark runs. `assume_clean: false` waits for
the resync to finish (`mdadm --wait`) before the target is used.

Teardown (and `volbench cleanup`) stops the array and zeroes the md superblocks
of members that are still ours. md needs the md driver: on a kernel without it
the target fails with a message naming the lab (`volbench lab run`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.spec import Boolean, Field, Size, Text
from volbench.core import units
from volbench.core.errors import ResourceError
from volbench.system import proc
from volbench.system.block import blockstack, guard, stackparse
from volbench.system.block.disks import DiskSource, SourceRules, parse_source, provide
from volbench.system.block.filesystems import FsSpec, fs_fields, parse_fs
from volbench.system.host.tools import require
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec, present

LEVELS = {"raid0": 2, "raid1": 2, "raid10": 2}
ALIASES = {"0": "raid0", "1": "raid1", "10": "raid10"}
RAID10_LAYOUTS = ("n2", "f2", "o2")
TIMEOUT = 300.0


@dataclass(frozen=True)
class MdSpec(TargetSpec):
    """An md RAID target as the experiment file gives it: the fields, read and checked."""

    source: DiskSource = DiskSource(count=2)
    level: str = "raid0"
    chunk_size: int = 0
    layout: str = ""
    assume_clean: bool = True
    fs: FsSpec = FsSpec("xfs")


SOURCE = SourceRules(default_count=2, minimum=2, maximum=64)
# `level` is read raw: YAML reads `level: 10` as a number, an alias of raid10.
LEVEL = Text("level", "raid0", choices=tuple(LEVELS), aliases=tuple(ALIASES),
             help="RAID level (0, 1, 10 work too)")
CHUNK_SIZE = Size("chunk_size", None, help="mdadm --chunk (default mdadm's); not raid1")
LAYOUT = Text("layout", None, help="raid10 only: " + ", ".join(RAID10_LAYOUTS))
ASSUME_CLEAN = Boolean("assume_clean", True, help="mdadm --assume-clean: no initial resync")
FIELDS: tuple[Field[Any], ...] = (LEVEL, CHUNK_SIZE, LAYOUT, ASSUME_CLEAN)


def parse(r: Reader, name: str, limits: Limits) -> MdSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    source = parse_source(r, SOURCE)
    raw_level = str(r.raw(LEVEL.name, LEVEL.default))
    level = ALIASES.get(raw_level, raw_level)
    if level not in LEVELS:
        r.problem("level", f"'{raw_level}' is not one of: {', '.join(LEVELS)}")
        level = LEVEL.default
    chunk = r.get(CHUNK_SIZE)
    if level == "raid1" and r.has("chunk_size"):
        r.problem("chunk_size", "raid1 has no chunks", "remove chunk_size")
    elif chunk and (chunk < 4096 or chunk & (chunk - 1)):
        r.problem("chunk_size", "must be a power of two of at least 4k, e.g. 512k")
    layout = r.get(LAYOUT)
    if layout and (level != "raid10" or layout not in RAID10_LAYOUTS):
        r.problem("layout", f"only raid10 has a layout: one of {', '.join(RAID10_LAYOUTS)}")
    return MdSpec(
        name,
        "mdraid",
        limits,
        source=source,
        level=level,
        chunk_size=chunk,
        layout=layout,
        assume_clean=r.get(ASSUME_CLEAN),
        fs=parse_fs(r),
    )


def create_argv(spec: MdSpec, array: str, devices: list[str]) -> list[str]:
    """The mdadm --create command for the spec: level, chunk and devices, with no prompt
    (mdadm would otherwise ask about devices that look used)."""
    argv = [
        "mdadm",
        "--create",
        array,
        "--run",
        f"--level={spec.level}",
        f"--raid-devices={len(devices)}",
        "--metadata=1.2",
    ]
    if spec.chunk_size:
        argv.append(f"--chunk={spec.chunk_size // 1024}")
    if spec.layout:
        argv.append(f"--layout={spec.layout}")
    if spec.assume_clean and spec.level != "raid0":
        argv.append("--assume-clean")
    return [*argv, *devices]


def create_array(
    scope: Scope, recipe: Recipe, spec: MdSpec, name: str, members: list[dict[str, Any]]
) -> str:
    """mdadm --create, journaled first; returns the array's kernel node (/dev/mdN)."""
    array = f"/dev/md/{name}"
    scope.add("md-array", name=name, members=members)
    recipe.run(create_argv(spec, array, [str(m["device"]) for m in members]), timeout=TIMEOUT)
    node = blockstack.wait_for(
        lambda: os.path.realpath(array) if Path(array).exists() else None, 30
    )
    if node is None:
        raise ResourceError(f"{array} did not appear after mdadm --create (is udev running?)")
    if not spec.assume_clean and spec.level != "raid0":
        recipe.run(["mdadm", "--wait", array], timeout=24 * 3600, check=False)
    return node


def detail(node: str) -> dict[str, Any]:
    """What `mdadm --detail` says of the array, parsed; a parse failure is recorded in the
    result rather than raised (the array exists and works)."""
    out = proc.run(["mdadm", "--detail", node], timeout=60, check=False).stdout
    try:
        found = stackparse.mdadm_detail(out, node)
    except Exception as exc:  # recorded, not fatal: the array exists and works
        return {"error": str(exc)}
    return {
        "fields": found.fields,
        "members": [{"device": m.device, "role": m.role, "state": m.state} for m in found.members],
    }


@contextmanager
def build(spec: MdSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    blockstack.require_feature("md RAID", f"target {spec.name} (mdraid)", (spec.level,))
    require("mdadm")
    disks = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir, ctx.redirect)
    name = blockstack.unique_name("vb", spec.name, limit=16)
    node = create_array(
        ctx.scope, ctx.recipe, spec, name, [blockstack.member_record(d) for d in disks]
    )
    size = int(Path(f"/sys/class/block/{Path(node).name}/size").read_text()) * 512
    info: dict[str, Any] = {
        "level": spec.level,
        "array": f"/dev/md/{name}",
        "device": node,
        "size": size,
        "chunk_size": spec.chunk_size or "mdadm default (512k)",
        "assume_clean": spec.assume_clean,
        "fs": spec.fs.fs,
        "disks": [d.as_info() for d in disks],
        "md": detail(node),
        "summary": f"md {spec.level} over {len(disks)} disks, {units.format_size(size)}, "
        f"{spec.fs.fs}",
    }
    devices = [d.device for d in disks]
    yield present(ctx, spec, spec.fs, node, devices, info)


def _arrays_of(name: str, members: list[str]) -> list[str]:
    """Running arrays that are ours: by their /dev/md/NAME link, or holding our members."""
    found: set[str] = set()
    link = Path(f"/dev/md/{name}")
    if link.exists():
        found.add(os.path.realpath(link))
    ours = {Path(m).name for m in members}
    try:
        text = Path("/proc/mdstat").read_text()
    except OSError:
        return sorted(found)
    for array in stackparse.mdstat(text):
        if ours & set(array.members):
            found.add(f"/dev/{array.name}")
    return sorted(found)


# Stops before the members are zeroed: udev may assemble a member again as the array
# stops (below), and that array must stop too.
STOP_ROUNDS = 3


@undoer("md-array")
def _undo_array(data: Mapping[str, Any]) -> None:
    members = [n for m in data.get("members", []) if (n := blockstack.current_member(m))]
    for _ in range(STOP_ROUNDS):
        arrays = _arrays_of(str(data["name"]), members)
        if not arrays:
            break
        for array in arrays:
            proc.run(["mdadm", "--stop", array], timeout=TIMEOUT)
        # A member written just before (mdadm --add in `volbench cleanup` after a kill
        # during a member fault) gets a "change" event from udev's watch on it, and
        # udev's rule runs `mdadm --incremental` on it: after the stop, that assembles
        # a new array from the member alone (seen in the lab: the zeroing then found
        # it busy). Wait for udev, then stop what it assembled.
        if shutil.which("udevadm"):
            proc.run(["udevadm", "settle", "--timeout=30"], timeout=TIMEOUT, check=False)
    for node in members:
        signatures, _ = guard.read_signatures(node)
        if any(s.type == "linux_raid_member" for s in signatures):
            proc.run(["mdadm", "--zero-superblock", node], timeout=TIMEOUT)


KIND = TargetKind(
    "mdraid",
    "md RAID 0/1/10 on listed disks or loop disks (needs md: the lab VM)",
    parse,
    build,
    loop_devices=lambda s: s.source.loop_devices,
    disk_space=lambda s: s.source.disk_space,
    tools=("mdadm", "wipefs", "mkfs.xfs"),
    fields=(*FIELDS, *SOURCE.fields(), *fs_fields()),
)
