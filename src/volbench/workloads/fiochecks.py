"""Checks of fio runs that need no file system: direct-I/O block sizes and whether a run
goes through the page cache (so whether dropping the caches before it changes anything)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from volbench.config.fields import Reader
from volbench.core import units
from volbench.core.errors import Problem
from volbench.core.model import Params, Scalar
from volbench.targets.base import Built

# Engines whose I/O with direct=1 really is O_DIRECT (mmap and splice go through the cache).
DIRECT_ENGINES = ("libaio", "io_uring", "sync", "psync", "vsync", "pvsync", "pvsync2",
                  "posixaio")
# The smallest logical block size of a Linux block device: direct I/O sizes are multiples.
SMALLEST_SECTOR = 512


def check_direct_sizes(r: Reader, matrix: Mapping[str, tuple[Scalar, ...]]) -> None:
    """With direct I/O every block size must be a multiple of the device's logical block
    size; no Linux block device has one below 512 bytes, so a size that is not a multiple
    of 512 can never run (fio fails with "Invalid argument"). The device's own size is
    checked again on the built target (block_size_problem)."""
    if not any(int(d) for d in matrix.get("direct", ())):
        return
    for value in matrix.get("bs", ()):
        size = units.parse_size(str(value))
        if size % SMALLEST_SECTOR:
            r.problem("bs", f"{value} is not a multiple of {SMALLEST_SECTOR} bytes, which "
                            "direct I/O needs (the device's logical block size)",
                      f"use a multiple of 4k (or of {SMALLEST_SECTOR}), or direct: false")


def device_gone_problem(built: Built) -> Problem | None:
    """A device target whose device is no longer a block device, named before fio starts.

    A disk pulled by a fault (or unplugged) takes its node with it; fio given the node's
    path would then create a regular file there (seen in the lab: a file /dev/vdc in the
    guest's /dev), writing where nothing was given to write."""
    device = built.block_device
    if built.path is not None or device is None:
        return None
    try:
        mode = os.stat(device).st_mode
    except FileNotFoundError:
        what = "is gone"
    else:
        if stat.S_ISBLK(mode):
            return None
        what = "is no longer a block device"
    return Problem(f"target {built.name}", f"its device {device} {what} (a disk pulled by a "
                   "fault, or removed since the target was built)",
                   "return the disk and build the target again; volbench writes to no "
                   "path but the device it built on")


def block_size_problem(params: Params, built: Built, sector: int | None) -> Problem | None:
    """A direct-I/O case whose block size the target's device cannot take (its logical
    block size `sector`, None when unknown), named before fio starts."""
    if not int(params.get("direct", 0)) or not sector or "bs" not in params:
        return None
    size = units.parse_size(str(params["bs"]))
    if size % sector == 0:
        return None
    return Problem("bs", f"{params['bs']} is not a multiple of the logical block size of "
                         f"target {built.name} ({sector} bytes), which direct I/O needs",
                   f"use a multiple of {sector} bytes, or direct: false")


def uncached(jobfile: bool, options: Mapping[str, str], params: Params) -> bool:
    """Does every I/O of this run bypass the page cache? Only volbench's own job (no job
    file, which may do anything) with direct=1 through an O_DIRECT engine, and no option
    that could turn that off."""
    if jobfile or not int(params.get("direct", 0)):
        return False
    if str(params.get("ioengine", "libaio")) not in DIRECT_ENGINES:
        return False
    return not {"direct", "buffered", "ioengine", "mem", "iomem"} & set(options)
