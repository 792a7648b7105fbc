"""LVM: linear (one disk or a span over N), striped, thin pool, thin volume, thin snapshot.

    - {name: lvm1, type: lvm, devices: [/dev/disk/by-id/virtio-d2]}          # LVM x1
    - {name: span3, type: lvm, devices: [/dev/disk/by-id/virtio-d3, …d4, …d5]}
    - {name: striped, type: lvm, layout: striped, stripes: 2, stripe_size: 64k,
       devices: [/dev/disk/by-id/virtio-d6, /dev/disk/by-id/virtio-d7]}
    - {name: thin, type: lvm, layout: thin, devices: [/dev/disk/by-id/virtio-d8],
       prefill: true}
    - {name: span2, type: lvm, disks: 2, size: 1G}                            # loop disks

Disks come from disks.py: listed disks pass the device guard; `disks: N` makes
fresh loop disks. One VG per target (`vb_<name>_<pid>`), PVs in the order listed,
so a linear LV fills the first disk before it reaches the second (seed 001's
span). `lv_size` takes a size (`-L`) or LVM's percentages (`-l 100%FREE`).

Layouts (`layout:`):
- `linear` (default): `lvcreate -l 100%FREE` over every PV.
- `striped`: `-i stripes -I stripe_size` (stripes defaults to the number of disks).
- `thin`: a thin pool (`--type thin-pool`, `chunk_size`, `zero`) and a thin volume
  of `virtual_size` (default: the pool's size) in it. Unwritten thin blocks read as
  zeros without touching a disk; `prefill: true` writes the whole volume first so
  reads are real and every write is a rewrite. Without it, the first write to each
  chunk provisions it (and zeroes it first unless `zero: false`): seed 004's cost.
- `thin-pool`: the pool itself as the device: LVM keeps `/dev/mapper/VG-pool`
  read-only nowadays, so volbench uses `VG-pool-tpool`, whose I/O the kernel passes
  straight to the pool's data LV (what seed 004's `dd of=/dev/mapper/VG-thin_pool` did).
- `thin-snapshot`: a thin volume (prefilled and given the filesystem when asked;
  `virtual_size` defaults to half the pool, so the snapshot has room to diverge)
  and a thin snapshot of it, which is what the workloads get: writes to blocks the
  snapshot still shares with its origin allocate new ones.

`fs: xfs|ext4|none` as for `disk`. The recipe, `lvs`/`pvs`/`vgs` JSON and lsblk
are recorded; teardown (and `volbench cleanup`) removes LVs, the VG and the PV
labels in reverse order. LVM needs device-mapper: on a kernel without it the
target fails with a message naming the lab (`volbench lab run`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.limits import Limits
from volbench.config.sections import Value
from volbench.config.spec import SIZE, Boolean, Field, Integer, Size, Text, TextList
from volbench.core import units
from volbench.core.errors import ResourceError
from volbench.system.block import blockstack, lvmops
from volbench.system.block.disks import DiskSource, SourceRules, parse_source, provide
from volbench.system.block.filesystems import FsSpec, fs_fields, mkfs_argv, parse_fs
from volbench.system.block.mounts import mount, mount_info
from volbench.system.host.tools import require
from volbench.system.recipe import Recipe
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec
from volbench.targets.precondition import discard_before_mkfs

LAYOUTS = ("linear", "striped", "thin", "thin-pool", "thin-snapshot")
THIN = ("thin", "thin-pool", "thin-snapshot")
_PERCENT = re.compile(r"^\d{1,3}%(FREE|VG|PVS)$")
# The same as it is written (any case, spaces around), for the schema.
PERCENT_PATTERN = r"^\s*[0-9]{1,3}%([Ff][Rr][Ee][Ee]|[Vv][Gg]|[Pp][Vv][Ss])\s*$"
# Slowest rate a prefill is given time for (a throttled lab disk writes ~50 MiB/s).
PREFILL_BPS = 2 * 1024**2


@dataclass(frozen=True)
class LvmSpec(TargetSpec):
    """An LVM target as the experiment file gives it: the fields, read and checked."""

    source: DiskSource = DiskSource()
    layout: str = "linear"
    stripes: int = 0
    stripe_size: int = 0
    # A size in bytes ("-L …b") or an LVM percentage ("-l 100%FREE").
    lv_size: str = "100%FREE"
    virtual_size: int = 0
    chunk_size: int = 0
    zero: bool = True
    prefill: bool = False
    fs: FsSpec = FsSpec("xfs")
    lvcreate_options: tuple[str, ...] = ()


SOURCE = SourceRules(default_count=1, maximum=64)
LAYOUT = Text("layout", "linear", choices=LAYOUTS, help="what the LV is (docs/layouts.md)")
STRIPES = Integer("stripes", None, minimum=0, maximum=64,
                  help="striped: stripes (lvcreate -i); default the number of disks")
STRIPE_SIZE = Size("stripe_size", None, help="striped: lvcreate -I (default LVM's, 64k)")
# A size (-L) or an LVM percentage (-l): read by _lv_size, not by one typed reader.
LV_SIZE = Value("lv_size", None, help="the LV: a size or a percentage; default 100%FREE, "
                                      "90%FREE for a thin pool (room for its metadata)",
                value={"anyOf": [SIZE, {"type": "string", "pattern": PERCENT_PATTERN}]})
VIRTUAL_SIZE = Size("virtual_size", None, help="thin: the thin volume (default the pool's "
                                               "size, half of it for thin-snapshot)")
CHUNK_SIZE = Size("chunk_size", None, help="thin: pool chunk (--chunksize, default LVM's)")
ZERO = Boolean("zero", True, help="thin: zero new chunks before their first write (-Z y)")
PREFILL = Boolean("prefill", False, help="thin: write the whole volume first")
LVCREATE_OPTIONS = TextList("lvcreate_options", [], help="passed to lvcreate verbatim")
FIELDS: tuple[Field[Any], ...] = (LAYOUT, STRIPES, STRIPE_SIZE, LV_SIZE, VIRTUAL_SIZE,
                                  CHUNK_SIZE, ZERO, PREFILL, LVCREATE_OPTIONS)


def _lv_size(r: Reader, layout: str) -> str:
    # A thin pool needs room for its metadata and LVM's spare copy of it.
    default = "90%FREE" if layout in THIN else "100%FREE"
    raw = r.raw(LV_SIZE.name, default)
    if isinstance(raw, str) and _PERCENT.match(raw.strip().upper()):
        return raw.strip().upper()
    size = r.size(LV_SIZE.name, default)
    if size < 8 * 1024**2:
        r.problem(LV_SIZE.name, "must be at least 8M, or a percentage such as 100%FREE")
    return str(size)


def parse(r: Reader, name: str, limits: Limits) -> LvmSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    source = parse_source(r, SOURCE)
    layout = r.get(LAYOUT)
    stripes = r.get(STRIPES)
    if layout == "striped":
        stripes = stripes or source.n
        if not 2 <= stripes <= source.n:
            r.problem(
                "stripes",
                f"{stripes} stripes need 2..{source.n} disks (this target has {source.n})",
                "list more disks or lower stripes",
            )
    else:
        for key in ("stripes", "stripe_size"):
            if r.has(key):
                r.problem(key, "only applies to layout: striped", "add layout: striped")
    stripe_size = r.get(STRIPE_SIZE)
    if stripe_size and (stripe_size < 4096 or stripe_size & (stripe_size - 1)):
        r.problem("stripe_size", "must be a power of two of at least 4k, e.g. 64k")
    thin_only = ("virtual_size", "chunk_size", "zero", "prefill")
    if layout not in THIN:
        for key in thin_only:
            if r.has(key):
                r.raw(key)
                r.problem(
                    key,
                    "only applies to thin layouts",
                    "add layout: thin (or thin-pool, thin-snapshot)",
                )
    chunk = r.get(CHUNK_SIZE)
    if chunk and (chunk < 64 * 1024 or chunk % (64 * 1024)):
        r.problem("chunk_size", "a thin pool chunk is a multiple of 64k (64k … 1G)")
    fs = parse_fs(r)
    prefill = r.get(PREFILL)
    if prefill and layout == "thin-pool":
        r.problem(
            "prefill", "the pool device is not thin: nothing to provision", "use layout: thin"
        )
    return LvmSpec(
        name,
        "lvm",
        limits,
        source=source,
        layout=layout,
        stripes=stripes,
        stripe_size=stripe_size,
        lv_size=_lv_size(r, layout),
        virtual_size=r.get(VIRTUAL_SIZE),
        chunk_size=chunk,
        zero=r.get(ZERO),
        prefill=prefill,
        fs=fs,
        lvcreate_options=tuple(r.get(LVCREATE_OPTIONS)),
    )


def _size_args(size: str) -> list[str]:
    return ["-l", size] if "%" in size else ["-L", f"{size}b"]


def _make_lvs(spec: LvmSpec, ctx: BuildContext, vg: str, pvs: list[str]) -> str:
    """Create the layout's LVs; returns the name of the LV the workloads get."""
    extra = list(spec.lvcreate_options)
    if spec.layout in ("linear", "striped"):
        args = _size_args(spec.lv_size)
        if spec.layout == "striped":
            args += ["-i", str(spec.stripes)]
            if spec.stripe_size:
                args += ["-I", f"{spec.stripe_size // 1024}k"]
        # The PVs in the listed order: a span fills the first disk first.
        lvmops.create_lv(ctx.scope, ctx.recipe, vg, "lv", [*args, *extra, vg, *pvs])
        return "lv"
    pool = ["--type", "thin-pool", *_size_args(spec.lv_size), "-Z", "y" if spec.zero else "n"]
    if spec.chunk_size:
        pool += ["--chunksize", f"{spec.chunk_size // 1024}k"]
    lvmops.create_lv(
        ctx.scope,
        ctx.recipe,
        vg,
        "pool",
        [*pool, *(extra if spec.layout == "thin-pool" else []), vg, *pvs],
    )
    if spec.layout == "thin-pool":
        return "pool"
    virtual = spec.virtual_size or lvmops.lv_int(vg, "pool", "lv_size")
    if spec.layout == "thin-snapshot" and not spec.virtual_size:
        # Half the pool: room for the snapshot to diverge from its origin entirely.
        virtual = virtual // 2 // 2**20 * 2**20
    lvmops.create_lv(
        ctx.scope, ctx.recipe, vg, "lv", ["-V", f"{virtual}b", "--thinpool", f"{vg}/pool", *extra]
    )
    return "lv"


def _device(vg: str, lv: str, layout: str) -> str:
    if layout == "thin-pool":
        found = blockstack.wait_for(lambda: lvmops.pool_device(vg, lv), 30)
        if found is None:
            raise ResourceError(
                f"no writable thin-pool device for {vg}/{lv} (dmsetup table shows what exists)"
            )
        return found
    path = lvmops.lv_value(vg, lv, "lv_dm_path") or f"/dev/mapper/{vg}-{lv}"
    if blockstack.wait_for(lambda: path if Path(path).exists() else None, 30) is None:
        raise ResourceError(f"{path} did not appear after lvcreate (is udev running?)")
    return path


def prefill(recipe: Recipe, device: str, size: int) -> None:
    """Write every block once with direct I/O, so thin chunks are provisioned."""
    mib = size // 1024**2
    recipe.run(
        [
            "dd",
            "if=/dev/zero",
            f"of={device}",
            "bs=1M",
            f"count={mib}",
            "oflag=direct",
            "status=none",
        ],
        timeout=120 + size / PREFILL_BPS,
    )


def _no_discard(fs: str) -> tuple[str, ...]:
    # mkfs discards the whole device by default, which on a thin volume would
    # unprovision every chunk the prefill just wrote.
    return {"xfs": ("-K",), "ext4": ("-E", "nodiscard")}.get(fs, ())


def _snapshot(spec: LvmSpec, ctx: BuildContext, vg: str, origin: str) -> str:
    """Filesystem and prefill on the origin, then a thin snapshot of it: the snapshot
    shares every block, so the workloads' writes break the sharing."""
    device = _device(vg, origin, "thin")
    if spec.prefill:
        prefill(ctx.recipe, device, lvmops.lv_int(vg, origin, "lv_size"))
    if spec.fs.mounted:
        extra = _no_discard(spec.fs.fs) if spec.prefill else ()
        ctx.recipe.run(mkfs_argv(spec.fs.fs, [device], extra + spec.fs.mkfs_options), timeout=600)
    # -kn: a thin snapshot is created with activation skipped; this one is to be used.
    lvmops.create_lv(ctx.scope, ctx.recipe, vg, "snap", ["-s", "-kn", f"{vg}/{origin}"])
    return "snap"


@contextmanager
def build(spec: LvmSpec, ctx: BuildContext) -> Iterator[Built]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    blockstack.require_feature(
        "device-mapper",
        f"target {spec.name} (lvm)",
        ("dm-thin-pool",) if spec.layout in THIN else (),
    )
    require("lvm")
    disks = provide(ctx.scope, ctx.recipe, spec.source, ctx.workdir, ctx.redirect)
    vg = blockstack.unique_name("vb", spec.name)
    pvs = [d.device for d in disks]
    lvmops.create_vg(ctx.scope, ctx.recipe, vg, [blockstack.member_record(d) for d in disks])
    lv = _make_lvs(spec, ctx, vg, pvs)
    # Before the snapshot's origin is prefilled or any filesystem made.
    discard_before_mkfs(ctx, spec, [_device(vg, lv, "thin" if spec.layout == "thin-snapshot"
                                                 else spec.layout)])
    formatted = False
    if spec.layout == "thin-snapshot":
        lv = _snapshot(spec, ctx, vg, lv)
        formatted = spec.fs.mounted
    device = _device(vg, lv, spec.layout)
    size = lvmops.lv_int(vg, lv, "lv_size")
    if spec.prefill and spec.layout == "thin":
        prefill(ctx.recipe, device, size)
    info: dict[str, Any] = {
        "layout": spec.layout,
        "vg": vg,
        "lv": lv,
        "device": device,
        "size": size,
        "fs": spec.fs.fs,
        "disks": [d.as_info() for d in disks],
        "prefill": spec.prefill,
    }
    if spec.layout == "striped":
        info["stripes"] = spec.stripes
        info["stripe_size"] = spec.stripe_size or "LVM default (64k)"
    if spec.layout in THIN:
        info["zero_new_chunks"] = spec.zero
    path = None
    if spec.fs.mounted:
        if not formatted:
            extra = _no_discard(spec.fs.fs) if spec.prefill else ()
            ctx.recipe.run(
                mkfs_argv(spec.fs.fs, [device], extra + spec.fs.mkfs_options), timeout=600
            )
        options = spec.fs.mount_options
        if spec.layout == "thin-snapshot" and spec.fs.fs == "xfs":
            options = ("nouuid", *options)  # the snapshot carries its origin's UUID
        path = mount(
            ctx.scope, ctx.recipe, device, ctx.workdir / "mnt", fstype=spec.fs.fs, options=options
        )
        info["mount"] = mount_info(path)
    info["lvm"] = lvmops.topology(vg)
    info["summary"] = describe(spec, len(disks), size)
    yield Built(spec.name, spec.type, path=path, block_device=device, devices=pvs, info=info,
                probe=(lambda: pool_usage(vg)) if spec.layout in THIN else None)


def pool_usage(vg: str) -> dict[str, Any]:
    """How full the thin pool is now (lvs data_percent; it grows as runs first touch
    blocks, and preconditioning is meant to bring it near 100)."""
    value = lvmops.lv_value(vg, "pool", "data_percent").strip()
    try:
        return {"thin_pool_data_percent": float(value)}
    except ValueError:
        return {"thin_pool_data_percent": None}


def describe(spec: LvmSpec, disks: int, size: int) -> str:
    """One line for reports: 'LVM striped x2 (64k) over 2 disks, 2.0 GiB, xfs'."""
    what = {
        "linear": "LVM linear" + (f" span over {disks} disks" if disks > 1 else " on 1 disk"),
        "striped": f"LVM striped x{spec.stripes}"
        + (f" ({units.format_size(spec.stripe_size)})" if spec.stripe_size else "")
        + f" over {disks} disks",
        "thin": "LVM thin volume" + (" (prefilled)" if spec.prefill else ""),
        "thin-pool": "LVM thin pool (data device)",
        "thin-snapshot": "LVM thin snapshot",
    }[spec.layout]
    return f"{what}, {units.format_size(size)}, {spec.fs.fs}"


KIND = TargetKind(
    "lvm",
    "LVM on listed disks or loop disks: linear/span, striped, thin pool, thin volume, "
    "thin snapshot (needs device-mapper: the lab VM)",
    parse,
    build,
    loop_devices=lambda s: s.source.loop_devices,
    disk_space=lambda s: s.source.disk_space,
    tools=("lvm", "wipefs", "mkfs.xfs"),
    fields=(*FIELDS, *SOURCE.fields(), *fs_fields()),
)
