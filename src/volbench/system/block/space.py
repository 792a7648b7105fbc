"""Running out of space, named as such (issue 12 §5).

A workload that does not fit its target fails with ENOSPC, and the tool's own words
("io_u error … No space left on device", or just an empty JSON file) do not say which
filesystem, how much was free or how much was needed. Worse, the partial data file
stays and makes every later run on that target fail too. This module:

- takes a listing of the target's directory before a run or setup step;
- after a failure that reports ENOSPC, or leaves the target's filesystem full, removes
  what the step created there and says which filesystem, how much is free and how much
  the workload needed;
- tells "no room for the run's own output" (the work directory is full) from a target
  that is full, instead of the parser's "cannot read fio output".
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

from volbench.core import units
from volbench.system.block.mounts import mount_info

# How tools say it: strerror(ENOSPC) in their messages, errno 28 in fio's JSON.
_ENOSPC = re.compile(rf"{re.escape(os.strerror(errno.ENOSPC))}|\bENOSPC\b|"
                     rf"\"error\"\s*:\s*{errno.ENOSPC}\b|err={errno.ENOSPC}/", re.IGNORECASE)
# Less than this left counts as full: root may write into the reserved blocks, and a
# filesystem keeps a little for its own metadata.
FULL_BYTES = 1024 * 1024


def mentions_enospc(*texts: str) -> bool:
    return any(_ENOSPC.search(t) for t in texts if t)


def entries(directory: Path | None) -> set[str] | None:
    """The names in `directory` now (None when there is no directory to watch)."""
    if directory is None:
        return None
    try:
        return set(os.listdir(directory))
    except OSError:
        return None


def free_bytes(path: Path) -> int | None:
    """Bytes root can still write (f_bfree: root may use the reserved blocks)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bfree * st.f_frsize


def is_full(path: Path) -> bool:
    free = free_bytes(path)
    return free is not None and free < FULL_BYTES


def remove_new(directory: Path, before: set[str]) -> list[str]:
    """Remove what was created in `directory` since `before` was listed."""
    removed = []
    for name in sorted(set(os.listdir(directory)) - before):
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(name)
    return removed


def _filesystem(path: Path) -> str:
    info = mount_info(path)
    fs = info.get("fstype", "?")
    source = info.get("source", "?")
    target = info.get("target", str(path))
    total = shutil.disk_usage(path).total
    return f"{fs} {source} on {target}, {units.format_size(total)}"


def target_full(directory: Path, needed: int | None, before: set[str] | None) -> str:
    """The message for a workload that did not fit, after removing its partial files."""
    removed = remove_new(directory, before) if before is not None else []
    free = free_bytes(directory) or 0
    need = f"; the workload needs {units.format_size(needed)}" if needed else ""
    gone = f"; its partial files were removed ({', '.join(removed)})" if removed else ""
    return (f"no space left on the target ({_filesystem(directory)}): "
            f"{units.format_size(free)} free{need}{gone}; give the target more space or "
            "the workload a smaller size")


def device_full(device: str, needed: int | None) -> str:
    need = f"the workload needs {units.format_size(needed)}, " if needed else ""
    return (f"no space left on the raw device {device}: {need}more than the device holds; "
            "give the target a larger disk or the workload a smaller size")


def output_full(rundir: Path, what: str = "the run's own output",
                fix: str = "set workdir: to a larger filesystem") -> str:
    where = rundir if rundir.exists() else rundir.parent
    free = free_bytes(where) or 0
    return (f"no space left for {what} in {rundir} ({_filesystem(where)}, "
            f"{units.format_size(free)} free); free space there or {fix}")


def explain(texts: list[str], *, directory: Path | None, device: str | None, rundir: Path,
            needed: int | None, before: set[str] | None) -> str | None:
    """Why a failed step failed, if it was space; None when it was something else.

    The run's own directory is looked at first: when it is full, whatever the tool
    printed, the output could not be written."""
    if is_full(rundir if rundir.exists() else rundir.parent):
        return output_full(rundir)
    if directory is not None and (mentions_enospc(*texts) or is_full(directory)):
        return target_full(directory, needed, before)
    if device is not None and mentions_enospc(*texts):
        return device_full(device, needed)
    return None
