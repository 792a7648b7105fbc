"""LVM commands volbench runs, the state it reads back, and the undo of VGs and LVs.

Every VG and LV is journaled before it is created (kinds `lvm-vg`, `lvm-lv`).
The undos are idempotent and work on whatever is left: a VG that was never
created, one whose LVs are still active, PVs without a VG (killed between
pvcreate and vgcreate), device-mapper tables without LVM metadata. A PV is only
wiped while it is still ours (`blockstack.current_member`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volbench.core.errors import CommandFailed, ResourceError
from volbench.system import proc
from volbench.system.block import blockstack, guard, stackparse
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe

TIMEOUT = 300.0
# Report columns volbench records (sizes in bytes: --units b --nosuffix).
LV_COLUMNS = (
    "lv_name,vg_name,lv_size,lv_attr,segtype,stripes,stripe_size,pool_lv,origin,"
    "data_percent,metadata_percent,chunk_size,lv_dm_path,lv_active,devices"
)
SEG_COLUMNS = "lv_name,segtype,stripes,stripe_size,seg_start,seg_size,devices"
PV_COLUMNS = "pv_name,vg_name,pv_size,pv_free,dev_size"
VG_COLUMNS = "vg_name,pv_count,lv_count,vg_size,vg_free,vg_extent_size"
REPORT = ("--reportformat", "json", "--units", "b", "--nosuffix")


def report(
    command: str, section: str, columns: str, *names: str, extra: Sequence[str] = ()
) -> list[dict[str, str]]:
    """Rows of an lvs/pvs/vgs JSON report; [] when the names do not exist."""
    done = proc.run([command, *REPORT, *extra, "-o", columns, *names], timeout=TIMEOUT, check=False)
    if not done.stdout.strip():
        if done.returncode != 0 and "not found" not in done.stderr.lower():
            raise CommandFailed(done.argv, done.returncode, done.stderr)
        return []
    return stackparse.lvm_report(done.stdout, section, command)


def vg_exists(vg: str) -> bool:
    return bool(report("vgs", "vg", "vg_name", vg))


def lv_exists(vg: str, lv: str) -> bool:
    return bool(report("lvs", "lv", "lv_name", f"{vg}/{lv}"))


def lv_value(vg: str, lv: str, column: str) -> str:
    rows = report("lvs", "lv", column, f"{vg}/{lv}")
    return rows[0].get(column, "") if rows else ""


def lv_int(vg: str, lv: str, column: str) -> int:
    """A numeric column of one LV (lv_size in bytes …)."""
    value = stackparse.lvm_int(lv_value(vg, lv, column))
    if value is None:
        raise ResourceError(f"lvs reports no {column} for {vg}/{lv}")
    return value


def topology(vg: str) -> dict[str, Any]:
    """The VG as LVM reports it: VG, PVs, LVs (hidden sub-LVs too) and their segments."""
    return {
        "vgs": report("vgs", "vg", VG_COLUMNS, vg),
        "pvs": report("pvs", "pv", PV_COLUMNS, extra=("-S", f"vg_name={vg}")),
        "lvs": stackparse.merge_lv_rows(report("lvs", "lv", LV_COLUMNS, vg, extra=("-a",))),
        "segments": report("lvs", "seg", SEG_COLUMNS, vg, extra=("-a", "--segments")),
    }


# -- creating --------------------------------------------------------------------------------


def create_vg(scope: Scope, recipe: Recipe, vg: str, members: list[dict[str, Any]]) -> None:
    """pvcreate + vgcreate, journaled first. No -f/-y: a signature that appeared since
    the device guard looked makes pvcreate refuse (its question gets no answer)."""
    scope.add("lvm-vg", name=vg, vg=vg, pvs=members)
    devices = [str(m["device"]) for m in members]
    recipe.run(["pvcreate", "-q", *devices], timeout=TIMEOUT)
    recipe.run(["vgcreate", "-q", vg, *devices], timeout=TIMEOUT)


def create_lv(scope: Scope, recipe: Recipe, vg: str, lv: str, args: Sequence[str]) -> None:
    """lvcreate -n LV ARGS…, journaled first."""
    scope.add("lvm-lv", name=f"{vg}/{lv}", vg=vg, lv=lv)
    recipe.run(["lvcreate", "-q", "-y", "-n", lv, *args], timeout=TIMEOUT)


# -- undo ------------------------------------------------------------------------------------


@undoer("lvm-lv")
def _undo_lv(data: Mapping[str, Any]) -> None:
    vg, lv = str(data["vg"]), str(data["lv"])
    if lv_exists(vg, lv):
        proc.run(["lvremove", "-q", "-f", "-y", f"{vg}/{lv}"], timeout=TIMEOUT)


def dm_target_type(name: str) -> str | None:
    """The device-mapper target of a device's first table line ('linear', 'thin-pool' …)."""
    done = proc.run(["dmsetup", "table", name], timeout=60, check=False)
    words = done.stdout.split()
    return words[2] if done.returncode == 0 and len(words) > 2 else None


def dm_read_only(name: str) -> bool:
    node = os.path.realpath(f"/dev/mapper/{name}")
    try:
        return Path(f"/sys/class/block/{Path(node).name}/ro").read_text().strip() == "1"
    except OSError:
        return True


def pool_device(vg: str, pool: str) -> str | None:
    """The writable thin-pool target of a pool: LVM names it VG-POOL-tpool once thin
    volumes exist (VG-POOL is then a read-only layer on top), VG-POOL before."""
    for name in (f"{vg}-{pool}-tpool", f"{vg}-{pool}"):
        if dm_target_type(name) == "thin-pool" and not dm_read_only(name):
            return f"/dev/mapper/{name}"
    return None


def dm_leftovers(vg: str) -> list[str]:
    """device-mapper devices of the VG that LVM no longer knows about (names 'VG-…')."""
    done = proc.run(["dmsetup", "ls"], timeout=60, check=False)
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    # volbench's VG names have no '-', so '<vg>-' starts exactly this VG's devices.
    return [n for n in names if n.startswith(f"{vg}-")]


@undoer("lvm-vg")
def _undo_vg(data: Mapping[str, Any]) -> None:
    vg = str(data["vg"])
    if vg_exists(vg):
        proc.run(["vgchange", "-q", "-an", vg], timeout=TIMEOUT, check=False)
        removed = proc.run(["vgremove", "-q", "-ff", "-y", vg], timeout=TIMEOUT, check=False)
        if removed.returncode != 0 and vg_exists(vg):
            # A PV that vanished keeps the VG: drop the missing PVs, then try again.
            proc.run(
                ["vgreduce", "-q", "--removemissing", "--force", vg], timeout=TIMEOUT, check=False
            )
            proc.run(["vgremove", "-q", "-ff", "-y", vg], timeout=TIMEOUT)
    # Tables left by a command killed halfway (or a VG whose PVs vanished): dependents
    # first, which `dmsetup ls` does not order, so retry until nothing is left.
    for _ in range(4):
        left = dm_leftovers(vg)
        if not left:
            break
        for name in left:
            proc.run(["dmsetup", "remove", "--retry", name], timeout=60, check=False)
    left = dm_leftovers(vg)
    if left:
        raise CommandFailed(
            ["dmsetup", "remove", *left], 1, "device-mapper devices still in use (mounted?)"
        )
    for member in data.get("pvs", []):
        node = blockstack.current_member(member)
        if node is None:
            continue
        signatures, _ = guard.read_signatures(node)
        if any(s.type == "LVM2_member" for s in signatures):
            proc.run(["pvremove", "-q", "-ff", "-y", node], timeout=TIMEOUT)
