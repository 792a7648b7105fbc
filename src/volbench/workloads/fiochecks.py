"""Checks of fio runs: confinement (what `options:` and a job file, or the copy of it fio
reads, would reach outside the target), a device that is gone, direct-I/O block sizes, and
whether a run goes through the page cache (so whether dropping the caches before it
changes anything)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from volbench.config import pathcheck, userfile
from volbench.config.fields import Reader
from volbench.config.userfile import UserFileError
from volbench.core import units
from volbench.core.errors import ExperimentError, Problem
from volbench.core.model import Params, Scalar
from volbench.system.block import devices
from volbench.targets.base import Built

if TYPE_CHECKING:
    from volbench.workloads.fio import FioSpec

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


def read_jobfile_text(path: Path) -> str:
    """A job file or a file it includes: a regular file of at most 1 MiB of UTF-8."""
    return userfile.read_text(path, "fio job file")


def confinement(spec: FioSpec, params: Params, place: pathcheck.Place,
                copy: tuple[Path, str] | None = None) -> list[Problem]:
    """Everything in `options:` and the job file that would reach outside `place`
    (pathcheck), given what volbench itself passes: --directory for a job file on a
    directory target, or the data file, job name and engine of a matrix case. `copy`:
    the job file's copy in the run directory and its text, checked instead of the
    user's file (the copy is what fio reads)."""
    source = spec.options_at
    user = pathcheck.from_options(spec.options, source)
    base: list[pathcheck.Setting] = []
    if spec.jobfile is not None:
        if place.directory is not None:
            base.append(pathcheck.Setting("directory", place.directory, "global", "volbench"))
        try:
            user += (pathcheck.read_jobfile(copy[0], lambda _: copy[1]) if copy is not None
                     else pathcheck.read_jobfile(spec.jobfile, read_jobfile_text))
        except (UserFileError, pathcheck.TooManyJobs) as exc:
            return [Problem(str(spec.jobfile), str(exc), "give a fio job file")]
    else:
        data = (f"{place.directory}/volbench-fio-{params.get('size')}.dat"
                if place.directory is not None else place.device)
        field_at = source.rsplit(".", 1)[0]  # workloads[N]
        base += [pathcheck.Setting("name", spec.name, spec.name, f"{field_at}.name"),
                 pathcheck.Setting("filename", data, spec.name, "volbench's data file"),
                 pathcheck.Setting("ioengine", str(params.get("ioengine", "libaio")), spec.name,
                                   f"{field_at}.ioengine")]
    return pathcheck.check(user, place, base)


def built_place(built: Built) -> pathcheck.Place:
    """The built target as pathcheck sees it on this host (links resolved, special files
    named)."""
    return pathcheck.Place(str(built.path) if built.path is not None else None,
                           built.block_device, os.path.realpath,
                           special=pathcheck.special_file)


def confine(spec: FioSpec, params: Params, built: Built,
             copy: tuple[Path, str] | None = None) -> None:
    """Refuse, before fio starts, a run that would touch anything outside the target."""
    problems = confinement(spec, params, built_place(built), copy)
    gone = device_gone_problem(built)
    if gone is not None:
        raise ExperimentError([gone], f"fio workload {spec.name} on target {built.name}")
    if built.block_device is not None and spec.jobfile is None:
        wrong = block_size_problem(params, built, devices.logical_block_size(
            built.block_device))
        problems += [wrong] if wrong is not None else []
    if problems:
        raise ExperimentError(problems, f"fio workload {spec.name} on target {built.name}")


def jobfile_copy(spec: FioSpec, rundir: Path) -> dict[Path, str]:
    """The job file fio reads: a copy in the run directory with its includes in place,
    checked now and again right before fio starts (`copy_check`), not the user's file,
    which could change in between. Empty for volbench's own job."""
    if spec.jobfile is None:
        return {}
    try:
        text = pathcheck.flatten(spec.jobfile, read_jobfile_text)
    except (UserFileError, pathcheck.TooManyJobs) as exc:
        raise ExperimentError([Problem(str(spec.jobfile), str(exc))],
                              f"fio workload {spec.name}") from None
    return {rundir / "job.fio": text}


def copy_check(spec: FioSpec, params: Params, built: Built
               ) -> Callable[[Path, str], str | None]:
    """The check run on the job file's copy right before fio starts: the problems found,
    in one line, or None."""
    def check(path: Path, text: str) -> str | None:
        found = confinement(spec, params, built_place(built), (path, text))
        return "; ".join(str(p) for p in found) or None
    return check


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
