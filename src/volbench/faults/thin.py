"""A thin pool that runs out of space: `exhaust` / `free` on an LVM thin target.

The workload's blocks are already provisioned (fio lays its file out first), so filling
the pool alone would change nothing for it. A full pool bites where a write needs a new
chunk, as after a snapshot: the fault takes one first, so every chunk of the volume is
shared and its next write must break the sharing with a chunk of its own.

    exhaust: lvcreate -q -V POOL_SIZE --thinpool VG/pool -n vbfill
             lvchange --errorwhenfull y VG/pool    (unless it is already)
             lvcreate -q -s VG/lv -n vbsnap        (every chunk shared)
             fio --name=fill --filename=/dev/VG/vbfill --rw=write --bs=CHUNK --direct=1
                 --ioengine=libaio --iodepth=8 --fill_device=1
                                   (until ENOSPC: every chunk is taken; fio stops there
                                    with exit code 0)
             lvchange --errorwhenfull n VG/pool    (error_if_no_space: 0, or the pool
                                                    queued before and nothing is asked)
    free:    lvremove -q -f -y VG/vbfill VG/vbsnap; lvchange --refresh VG/pool
             (a pool out of data space goes back to writing when it is resumed; queued
              writes go on), and --errorwhenfull as it was

With `error_if_no_space` the pool fails such writes at once (ENOSPC, counted in
io_errors with continue_on_error); with `queue` (LVM's default) they wait, up to the
kernel's no_space_timeout, then fail. That timeout is dm_thin_pool's module parameter
(60 s by default), read by the kernel when a pool runs out of space; a fault's
`no_space_timeout` writes it before the fill and the undo writes back the value it had:

             echo SECONDS > /sys/module/dm_thin_pool/parameters/no_space_timeout

When it expires the kernel fails the queued writes with ENOSPC and the pool fails
further ones at once (its status then reads error_if_no_space, LVM's setting still
queue) until its table is loaded again (`free`'s refresh). The mode and the timeout are
recorded with the event.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import VolbenchError
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system import proc
from volbench.system.block import lvmops
from volbench.system.journal import undoer
from volbench.targets.base import Built

FILLER, SNAPSHOT = "vbfill", "vbsnap"
SECTOR = 512
TIMEOUT = 60.0
NO_SPACE_TIMEOUT = Path("/sys/module/dm_thin_pool/parameters/no_space_timeout")


def pool_status(status: str, table: str) -> dict[str, Any]:
    """A thin-pool's `dmsetup status` and `dmsetup table` lines as its free chunks, chunk
    size (bytes), mode (rw, out_of_data_space, ro) and what it does when full."""
    words, fields = status.split(), table.split()
    try:
        used, total = (int(x) for x in words[5].split("/"))
        chunk = int(fields[5]) * SECTOR
    except (IndexError, ValueError) as exc:
        raise FaultError(f"not a thin-pool status: {status.strip()!r} / {table.strip()!r}"
                         ) from exc
    when_full = next((w for w in words if w.endswith("_if_no_space")), "queue_if_no_space")
    return {"free_chunks": total - used, "chunks": total, "chunk_bytes": chunk,
            "mode": words[7] if len(words) > 7 else "", "when_full": when_full}


def _pool_name(vg: str) -> str:
    device = lvmops.pool_device(vg, "pool")
    if device is None:
        raise FaultError(f"no thin pool found in {vg}; exhaust acts on an lvm target with "
                         "layout thin")
    return Path(device).name


def _status(name: str) -> dict[str, Any]:
    status = proc.run(("dmsetup", "status", name), timeout=TIMEOUT).stdout
    return pool_status(status, proc.run(("dmsetup", "table", name), timeout=TIMEOUT).stdout)


def _errorwhenfull(vg: str) -> str | None:
    """LVM's own setting for the pool, y or n (None: no pool). Not the kernel's status:
    after no_space_timeout the kernel fails writes (status error_if_no_space) while LVM's
    setting, the one lvchange compares with, is still queue."""
    if not lvmops.lv_exists(vg, "pool"):
        return None
    return "y" if lvmops.lv_value(vg, "pool", "lv_when_full") == "error" else "n"


def no_space_timeout() -> int:
    """The kernel's no_space_timeout in seconds (dm_thin_pool is loaded: a pool exists)."""
    try:
        return int(NO_SPACE_TIMEOUT.read_text().strip())
    except (OSError, ValueError) as exc:
        raise FaultError(f"cannot read {NO_SPACE_TIMEOUT}: {exc}; is dm_thin_pool loaded?"
                         ) from exc


def _timeout_back(data: Mapping[str, Any]) -> list[Command]:
    """no_space_timeout as it was, if the fault changed it and it still differs."""
    was = data.get("no_space_timeout")
    if was is None:
        return []
    try:
        now = no_space_timeout()
    except FaultError:
        return []  # the module is gone (the lab VM ended): nothing to put back
    return [] if now == int(was) else [Command(path=str(NO_SPACE_TIMEOUT), text=str(was))]


def _mode_command(pool: str, now: str, wanted: str) -> list[Command]:
    """lvchange --errorwhenfull, only when it changes something (LVM refuses a value the
    pool has already: 'Error when full is already set', exit code 5)."""
    return [] if now == wanted else [Command(("lvchange", "--errorwhenfull", wanted, pool))]


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """The filler and the snapshot removed, the pool refreshed, its full mode and the
    kernel's no_space_timeout back."""
    vg, pool = str(data["vg"]), f"{data['vg']}/pool"
    back = _timeout_back(data)
    try:
        now = _errorwhenfull(vg)
    except VolbenchError:
        now = None
    if now is None:
        return back  # the pool is gone (torn down): nothing else of the fault is left
    gone = [f"{vg}/{lv}" for lv in (FILLER, SNAPSHOT) if lvmops.lv_exists(vg, lv)]
    out = [Command(("lvremove", "-q", "-f", "-y", *gone)),
           Command(("lvchange", "--refresh", pool))] if gone else []
    return out + _mode_command(pool, now, str(data["errorwhenfull"])) + back


@undoer("fault-thin-exhaust")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def exhaust(fault: FaultSpec, built: Built) -> Action:
    """Snapshot the volume, then fill the pool's free chunks; undone by `free`."""
    vg, lv = str(built.info.get("vg") or ""), str(built.info.get("lv") or "")
    if built.type != "lvm" or built.info.get("layout") != "thin" or not vg:
        raise FaultError(f"target {built.name} is not a thin volume; exhaust acts on an lvm "
                         "target with layout thin")
    try:
        name = _pool_name(vg)
        before = _status(name)
        was = _errorwhenfull(vg) or "n"
        timeout_was = no_space_timeout()
    except VolbenchError as exc:
        raise FaultError(f"cannot read the thin pool of {built.name}: {exc}") from exc
    wanted = fault.options.get("error_if_no_space")
    timeout = fault.options.get("no_space_timeout", timeout_was)
    final = was if wanted is None else ("y" if wanted else "n")
    size = int(before["chunks"]) * int(before["chunk_bytes"])
    pool = f"{vg}/pool"
    # The fill runs in error mode whatever is asked: a write past the last free chunk
    # of a queueing pool would wait its 60 s; the mode asked for is set after it.
    # The filler first, error mode next, the snapshot last: once every chunk is shared
    # the workload's writes take the free chunks by themselves (a 32M rest went within
    # seconds in the lab), and LVM makes no thin volume in a full pool.
    # The kernel reads no_space_timeout when the pool runs out of space: set before the fill.
    commands = [
        *([] if timeout == timeout_was else
          [Command(path=str(NO_SPACE_TIMEOUT), text=str(timeout))]),
        Command(("lvcreate", "-q", "-V", f"{size}b", "--thinpool", pool, "-n", FILLER)),
        *_mode_command(pool, was, "y"),
        Command(("lvcreate", "-q", "-s", f"{vg}/{lv}", "-n", SNAPSHOT)),
        Command(("fio", "--name=fill", f"--filename=/dev/{vg}/{FILLER}", "--rw=write",
                 f"--bs={before['chunk_bytes']}", "--direct=1", "--ioengine=libaio",
                 "--iodepth=8", "--fill_device=1")),
        *_mode_command(pool, "y", final)]

    def sample() -> dict[str, Any]:
        try:
            return {"thin_pool": _status(name)}
        except VolbenchError:
            return {"thin_pool": None}

    data = {"vg": vg, "pool": name, "errorwhenfull": was, "no_space_timeout": timeout_was}
    return Action("exhaust", "fault-thin-exhaust", data, lambda: list(commands), _undo_commands,
                  facts={"pool": before, "when_full": "error_if_no_space" if final == "y"
                         else "queue_if_no_space", "no_space_timeout_s": timeout},
                  sample=sample)
