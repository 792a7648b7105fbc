"""Preconditioning a built target (discard, fill) and the state it is measured in.

`precondition: {discard: true, fill: 2x}` (config/precondition.py) runs once per target
build, untimed, before any run:
- `discard`: blkdiscard of the layout's block device before its filesystem is made
  (`discard_before_mkfs`, called where each layout makes its filesystem). Only on
  devices volbench made itself, or listed disks marked `wipe: true` (`problems`, checked
  when the file is read and again right before the discard).
- `fill: Nx`: N sequential passes of 128 KiB direct writes with fio (`fill`, called by
  `open_target` before the throttle exists, so it runs at the device's own speed): over
  the whole device of a raw target; on a mounted target over one file that takes the
  filesystem's free space, removed after each pass. The workloads' files do not exist
  yet when the target is built, and each may be any size; the free space holds every
  block any of them can land on. Without the `discard` mount option the filesystem does
  not pass the removal down, so the device below (loop image, thin pool, SSD) keeps the
  blocks written.
The target's state (`state`) goes into its info and into every run's annotations.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from volbench.core.errors import ResourceError, UnsafeDevice, VolbenchError
from volbench.system.block import devices as block_devices
from volbench.system.block import diskstats
from volbench.system.block.disks import DiskSource
from volbench.system.host import hostinfo
from volbench.system.host.tools import require

if TYPE_CHECKING:  # base.present calls in here
    from volbench.targets.base import BuildContext, Built, TargetSpec

BLOCK = 128 * 1024
# Kinds whose block device volbench makes itself (loop images, zram, LVs, md arrays).
MADE_DEVICE = ("loopdisk", "btrfs", "zram", "image", "lvm", "mdraid")
# Kinds whose device is a disk the user lists (or an iSCSI LUN of one).
LISTED_DEVICE = ("disk", "iscsi")
# Kinds on a filesystem volbench did not make: filling it would fill the user's.
FOREIGN_FS = ("directory", "hosts")
LAB_DISKS = "/dev/disk/by-id/virtio-"
FILL_FILE = ".volbench-precondition.fill"
STATES = ("fresh", "filled", "preconditioned", "unknown")


def tools(spec: TargetSpec) -> tuple[str, ...]:
    """The programs the target's precondition runs."""
    pre = spec.precondition
    return (("blkdiscard",) if pre.discard else ()) + (("fio",) if pre.fill else ())


def summary(spec: TargetSpec) -> str:
    """One line for `volbench plan`: 'discard, then fill 2x (once when built, untimed)'."""
    pre = spec.precondition
    steps = (["discard before mkfs"] if pre.discard else []) + (
        [f"fill {pre.fill}x with sequential 128k writes"] if pre.fill else [])
    return ", then ".join(steps) + " (once when built, untimed, not in the estimate)"


def _sources(spec: TargetSpec) -> list[DiskSource]:
    return [v for v in vars(spec).values() if isinstance(v, DiskSource)]


def _unwiped(spec: TargetSpec) -> list[str]:
    return [d.path for s in _sources(spec) for d in s.listed if not d.wipe]


def problems(spec: TargetSpec, others: Mapping[str, TargetSpec] | None = None
             ) -> list[tuple[str, str, str]]:
    """(field, what is wrong, fix) for a precondition this target may not get; `others`
    (every target by name) lets a fill see a directory target under an `on:` chain."""
    pre, out = spec.precondition, []
    if pre.discard:
        why = _discard_refusal(spec)
        if why:
            out.append(("precondition.discard", why[0], why[1]))
    foreign = _foreign_below(spec, others or {})
    if pre.fill and foreign:
        out.append(("precondition.fill",
                    f"target {foreign} is on a filesystem volbench did not make: filling "
                    "its free space would fill yours",
                    "use a loopdisk or image target for preconditioning, or remove fill"))
    return out


def _foreign_below(spec: TargetSpec, others: Mapping[str, TargetSpec]) -> str | None:
    """The name of the first target in spec's `on:` chain (itself included) that sits on
    a filesystem of the user's."""
    todo, seen = [spec], set()
    while todo:
        one = todo.pop()
        if one.type in FOREIGN_FS:
            return one.name
        seen.add(one.name)
        todo += [others[d] for d in one.on if d in others and d not in seen]
    return None


def _discard_refusal(spec: TargetSpec) -> tuple[str, str] | None:
    if spec.type in MADE_DEVICE:
        return None
    if spec.type in LISTED_DEVICE:
        if spec.on:
            return (f"the device of this {spec.type} target belongs to target "
                    f"{', '.join(spec.on)}", "put precondition: {discard: true} on that target")
        unwiped = _unwiped(spec)
        if unwiped:
            return (f"discard erases every block; {', '.join(unwiped)} is a disk you listed "
                    "without wipe: true", "add wipe: true to that disk if its data may go, "
                    "or remove discard")
        return None
    return (f"a {spec.type} target has no block device of volbench's own to discard",
            "remove discard (discard the target it is built on instead)")


def discard_before_mkfs(ctx: BuildContext, spec: TargetSpec, devices: Sequence[str]) -> None:
    """blkdiscard the layout's devices if the spec asks; before mkfs, which would be lost.

    mkfs.xfs and mkfs.ext4 discard by default too; this discard also covers `fs: none`
    and mkfs options that turn theirs off, and is recorded with its time."""
    if not spec.precondition.discard:
        return
    refused = [p for p in problems(spec) if p[0].endswith("discard")]
    if refused:  # checked when the file was read; a second look costs nothing
        raise UnsafeDevice(", ".join(devices), refused[0][1], refused[0][2])
    for device in devices:
        if block_devices.discard_max_bytes(device) == 0:
            raise ResourceError(
                f"target {spec.name}: {device} does not take discards (its queue's "
                "discard_max_bytes is 0); remove precondition.discard for this target")
    started = time.monotonic()
    for device in devices:
        ctx.recipe.run([require("blkdiscard"), device], timeout=600)
    ctx.preconditioned["discard"] = {"devices": list(devices),
                                     "seconds": round(time.monotonic() - started, 3)}


def fill(ctx: BuildContext, spec: TargetSpec, built: Built) -> None:
    """Write the device, or the filesystem's free space, `fill` times (see the module)."""
    passes = spec.precondition.fill
    if not passes:
        return
    if built.path is not None:
        # fio's fill_device: write until the filesystem says ENOSPC. statvfs's free space
        # is only an estimate (btrfs said 253 MiB and took 183).
        size = 0
        target, what = str(built.path / FILL_FILE), "free space of the filesystem"
    elif built.block_device is not None:
        size = (block_devices.device_bytes(built.block_device) or 0) // BLOCK * BLOCK
        target, what = built.block_device, "whole device"
        if size < BLOCK:
            raise ResourceError(f"target {spec.name}: {target} is too small to fill "
                                f"({size} bytes)")
    else:
        raise ResourceError(f"target {spec.name}: nothing to fill (no device, no directory)")
    started, written, seconds, sizes = time.monotonic(), 0, [], []
    # The kernel's count beside fio's: what reached the devices under any filesystem.
    before = diskstats.read(built.devices)
    for n in range(passes):
        begun = time.monotonic()
        sizes.append(_fio_pass(ctx, target, size, ctx.workdir / f"precondition-{n + 1}.json"))
        written += sizes[-1]
        seconds.append(round(time.monotonic() - begun, 3))
        if built.path is not None:
            Path(target).unlink(missing_ok=True)
    ctx.preconditioned["fill"] = {
        "passes": passes, "what": what, "bytes_per_pass": sizes, "bytes_written": written,
        "device_bytes_written": (diskstats.read(built.devices) - before).write_bytes,
        "seconds": round(time.monotonic() - started, 3), "pass_seconds": seconds}


def _room(directory: Path) -> int:
    """The filesystem's size: a bound on what filling it writes, for the timeout."""
    stat = os.statvfs(directory)
    return stat.f_blocks * stat.f_frsize


def _fio_pass(ctx: BuildContext, target: str, size: int, output: Path) -> int:
    """One sequential pass over `size` bytes of a device, or a file until the filesystem
    is full (size 0); the bytes fio says it wrote."""
    limit = [f"--size={size}"] if size else ["--fill_device=1"]
    argv = [require("fio"), "--name=precondition", f"--filename={target}", "--rw=write",
            f"--bs={BLOCK}", "--direct=1", "--ioengine=libaio", "--iodepth=4",
            "--fallocate=none", *limit, "--output-format=json", f"--output={output}"]
    # Generous: 2 MiB/s is slower than any disk class volbench throttles to.
    room = size or _room(Path(target).parent)
    try:
        ctx.recipe.run(argv, timeout=300 + room / (2 * 2**20))
        text = output.read_text()
    finally:  # the target's directory must be empty for its teardown
        output.unlink(missing_ok=True)
    report = json.loads(text[text.index("{"):])
    return int(sum(job["write"]["io_bytes"] for job in report["jobs"]))


def _lab_disks(source: DiskSource) -> bool:
    """Disks the lab made for this boot: fresh sparse images (lab/vm.py), which are the
    only virtio disks inside the VM."""
    return hostinfo.inside_lab() and all(d.path.startswith(LAB_DISKS) for d in source.listed)


def base_state(spec: TargetSpec, deps: dict[str, Built]) -> str:
    """The state before preconditioning: fresh when volbench (or the lab) made every
    device from nothing, the dependency's state for a target built on another, unknown
    otherwise."""
    if spec.on:
        states = {str(deps[d].info.get("state", {}).get("state", "unknown"))
                  for d in spec.on if d in deps}
        return states.pop() if len(states) == 1 else "unknown"
    if spec.type in FOREIGN_FS or any(s.is_listed and not _lab_disks(s) for s in _sources(spec)):
        return "unknown"
    return "fresh" if spec.type in MADE_DEVICE + LISTED_DEVICE else "unknown"


def state(spec: TargetSpec, deps: dict[str, Built], done: dict[str, Any]) -> dict[str, Any]:
    """The recorded state: preconditioned (discard + fill), filled, fresh (made by
    volbench, or discarded, and nothing written but mkfs) or unknown (your disks)."""
    pre = spec.precondition
    if pre.fill and pre.discard:
        name = "preconditioned"
    elif pre.fill:
        name = "filled"
    elif pre.discard:
        name = "fresh"
    else:
        name = base_state(spec, deps)
    out: dict[str, Any] = {"state": name}
    if pre:
        # What the file asked for, then what was done (devices, bytes, seconds).
        out["precondition"] = {"asked": {"discard": pre.discard, "fill": pre.fill}, **done}
    return out


def run_state(built: Built) -> dict[str, Any]:
    """The target's state as one run starts: its recorded state, and the probe's facts
    now (a thin pool fills as runs touch blocks for the first time)."""
    recorded = built.info.get("state", {})
    return {"state": recorded.get("state", "unknown"), **probed(built)}


def probed(built: Built) -> dict[str, Any]:
    """The probe's facts now ({} without one); a fact missing is no reason to fail a
    build or a run, so its error is recorded instead."""
    if built.probe is None:
        return {}
    try:
        return built.probe()
    except VolbenchError as exc:
        return {"probe_error": str(exc)}


def after_steady_rounds(info: dict[str, Any]) -> None:
    """A filled target whose workloads repeat until steady is preconditioned (SNIA's
    fill, then rounds until the steady-state window holds)."""
    recorded = info.get("state")
    if isinstance(recorded, dict) and recorded.get("state") == "filled":
        recorded["state"] = "preconditioned"
        recorded["how"] = "fill, then rounds until steady (repeat: {until: steady})"
