"""The device guard: volbench never writes to a disk that is in use or holds data.

Every listed device (`devices:` of a target) passes `check()` before anything
writes to it. The rules, in the order they are tried (docs/safety.md):

  in use, never overridable          content, overridable per disk by `wipe: true`
  -------------------------------    ------------------------------------------
  not a block device                 LVM physical volume   (LVM2_member)
  no capacity                        md RAID member        (linux_raid_member)
  read-only                          swap signature        (swap)
  root filesystem                    partition table       (dos, gpt, PMBR, ...)
  mounted (itself or a partition)    signature             (a filesystem, LUKS, ...)
  swap in use
  held by another device (holders: dm, md, bcache)
  btrfs member (of a mounted btrfs)
  in use (an exclusive open fails: the kernel has it claimed)

The in-use rules read only sysfs, /proc and stat(); the content rules run
`wipefs --no-act`, which reads the device but never writes it. Every refusal is
an `UnsafeDevice` naming the rule, what was seen, and the fix. Loop disks that
volbench makes from fresh image files are exempt (they cannot hold anyone's data).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from volbench.core.errors import UnsafeDevice
from volbench.system import proc, procfs
from volbench.system.host.tools import require
from volbench.system.recipe import Recipe

SYS_BLOCK = Path("/sys/class/block")

# Rule names, as UnsafeDevice.rule carries them (tests and docs use these).
NOT_BLOCK = "not a block device"
NO_CAPACITY = "no capacity"
READ_ONLY = "read-only"
ROOT = "root filesystem"
MOUNTED = "mounted"
SWAP_ACTIVE = "swap in use"
HOLDERS = "held by another device"
BTRFS_MEMBER = "btrfs member"
BUSY = "in use"
UNREADABLE = "unreadable"
PV = "LVM physical volume"
MD_MEMBER = "md RAID member"
SWAP_SIGNATURE = "swap signature"
PARTITION_TABLE = "partition table"
SIGNATURE = "signature"

IN_USE_RULES = (
    NOT_BLOCK,
    NO_CAPACITY,
    READ_ONLY,
    ROOT,
    MOUNTED,
    SWAP_ACTIVE,
    HOLDERS,
    BTRFS_MEMBER,
    BUSY,
    UNREADABLE,
)
CONTENT_RULES = (PV, MD_MEMBER, SWAP_SIGNATURE, PARTITION_TABLE, SIGNATURE)

PARTITION_TABLES = frozenset({"dos", "gpt", "PMBR", "atari", "bsd", "mac", "sgi", "sun"})
_WIPE_FIX = (
    "if its data is not needed, set `wipe: true` for this disk in the experiment "
    "(volbench then erases the signatures with wipefs --all); otherwise list another disk"
)


@dataclass(frozen=True)
class Signature:
    """One signature wipefs found: where, what (xfs, LVM2_member, dos …), its UUID/label."""

    device: str
    offset: str
    type: str
    uuid: str | None = None
    label: str | None = None

    def __str__(self) -> str:
        extra = f" label {self.label!r}" if self.label else ""
        return f"{self.type} at offset {self.offset} of /dev/{self.device}{extra}"


def parse_wipefs(text: str) -> list[Signature]:
    """`wipefs --no-act --json` output → signatures (empty output: none)."""
    if not text.strip():
        return []
    found = json.loads(text).get("signatures", [])
    return [
        Signature(
            str(s.get("device", "")),
            str(s.get("offset", "")),
            str(s.get("type", "")),
            s.get("uuid"),
            s.get("label"),
        )
        for s in found
    ]


def content_rule(signature: Signature) -> str:
    """Which content rule a signature falls under."""
    if signature.type == "LVM2_member":
        return PV
    if signature.type == "linux_raid_member":
        return MD_MEMBER
    if signature.type == "swap":
        return SWAP_SIGNATURE
    if signature.type in PARTITION_TABLES:
        return PARTITION_TABLE
    return SIGNATURE


@dataclass(frozen=True)
class DeviceFacts:
    """What the guard saw of a device that passed (recorded in the target's info)."""

    listed: str
    node: str
    size: int
    partitions: tuple[str, ...] = ()
    signatures: tuple[Signature, ...] = field(default_factory=tuple)

    def as_info(self) -> dict[str, object]:
        return {
            "listed": self.listed,
            "device": self.node,
            "size": self.size,
            "partitions": list(self.partitions),
            "signatures_found": [str(s) for s in self.signatures],
        }


# -- reading the kernel's view --------------------------------------------------------------



def name_of(number: str) -> str | None:
    """Kernel name ('loop3', 'vda1') of the block device MAJ:MIN, if there is one."""
    link = Path("/sys/dev/block") / number
    return Path(os.path.realpath(link)).name if link.exists() else None


def _number(st: os.stat_result) -> str:
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def block_name(path: str) -> str | None:
    """Kernel name of a block device node or symlink to one; None if it is not one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return name_of(_number(st)) if stat.S_ISBLK(st.st_mode) else None


def partitions_of(name: str) -> list[str]:
    base = SYS_BLOCK / name
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "partition").exists())


def parent_of(name: str) -> str | None:
    """The whole disk a partition belongs to (None for a whole disk)."""
    base = SYS_BLOCK / name
    if not (base / "partition").exists():
        return None
    return Path(os.path.realpath(base)).parent.name


def _links(name: str, what: str) -> list[str]:
    directory = SYS_BLOCK / name / what
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def holders_of(name: str) -> list[str]:
    return _links(name, "holders")


def describe_holder(name: str) -> str:
    """'dm-0 (vg0-lv0)' or 'md127': the holder's kernel name and its friendly name."""
    friendly = procfs.read_text(SYS_BLOCK / name / "dm" / "name").strip()
    return f"{name} ({friendly})" if friendly else name


def stack_below(name: str) -> set[str]:
    """The device, its whole disk, and everything it is built from (slaves), recursively."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        parent = parent_of(current)
        if parent:
            todo.append(parent)
        todo.extend(_links(current, "slaves"))
    return seen


def _unescape(field_text: str) -> str:
    # /proc/self/mountinfo and /proc/swaps escape space, tab, newline and backslash as \ooo.
    out, i = [], 0
    while i < len(field_text):
        if field_text[i] == "\\" and field_text[i + 1 : i + 4].isdigit():
            out.append(chr(int(field_text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field_text[i])
            i += 1
    return "".join(out)


def mounts_by_device() -> dict[str, list[str]]:
    """Kernel device name → mount points, from /proc/self/mountinfo.

    Both the MAJ:MIN field and the source path count: btrfs (and overlay stacks)
    show an anonymous 0:N number, but name the real device as the source.
    """
    found: dict[str, list[str]] = {}
    for line in procfs.read_text(Path("/proc/self/mountinfo")).strip().splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 2:
            continue
        point = _unescape(fields[4])
        names = {name_of(fields[2]) if not fields[2].startswith("0:") else None}
        source = _unescape(rest[1])
        if source.startswith("/dev/"):
            names.add(block_name(source))
        for name in names - {None}:
            assert name is not None
            found.setdefault(name, []).append(point)
    return found


def active_swaps() -> dict[str, str]:
    """Kernel device name → swap area path, for swap on block devices (/proc/swaps)."""
    found: dict[str, str] = {}
    for line in procfs.read_text(Path("/proc/swaps")).strip().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1] == "partition":
            name = block_name(_unescape(parts[0]))
            if name:
                found[name] = _unescape(parts[0])
    return found


def root_stack() -> set[str]:
    """Every block device the root filesystem lives on (empty when / is 9p, tmpfs …)."""
    names: set[str] = set()
    for name, points in mounts_by_device().items():
        if "/" in points:
            names |= stack_below(name)
    return names


def btrfs_members() -> dict[str, str]:
    """Kernel device name → filesystem UUID, for devices of mounted btrfs filesystems."""
    found: dict[str, str] = {}
    base = Path("/sys/fs/btrfs")
    for fs in base.iterdir() if base.is_dir() else []:
        for dev in _links_dir(fs / "devices"):
            found[dev] = fs.name
    return found


def _links_dir(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _exclusive_open_fails(node: str) -> bool:
    """True when the kernel has the device claimed (mounted, held, swap, in a btrfs …)."""
    try:
        fd = os.open(node, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno == errno.EBUSY
    os.close(fd)
    return False


# -- the rules ------------------------------------------------------------------------------


def _family(name: str) -> list[str]:
    """The device and its partitions: a disk is in use when any part of it is."""
    return [name, *partitions_of(name)]


def _whole(listed: str, name: str) -> Iterator[UnsafeDevice]:
    """Refusals about the device itself: capacity, read-only, the root filesystem."""
    if procfs.read_text(SYS_BLOCK / name / "size").strip() in ("", "0"):
        yield UnsafeDevice(
            listed,
            NO_CAPACITY,
            f"/dev/{name} has size 0 (a loop device with "
            "no file attached?); list a disk with capacity",
        )
    if procfs.read_text(SYS_BLOCK / name / "ro").strip() == "1":
        yield UnsafeDevice(listed, READ_ONLY, f"/dev/{name} is read-only; list a writable disk")
    if root_stack() & (set(_family(name)) | stack_below(name)):
        yield UnsafeDevice(
            listed,
            ROOT,
            f"the root filesystem lives on /dev/{name} (or on the "
            "disk it belongs to); volbench never touches it, list another disk",
        )


def _parts_in_use(family: list[str]) -> Iterator[tuple[str, str]]:
    """(rule, what was seen and the fix) for each part of the disk in use, rule by rule."""
    mounts, swaps, members = mounts_by_device(), active_swaps(), btrfs_members()

    def mounted(p: str) -> str | None:
        return (
            (
                f"/dev/{p} is mounted at {', '.join(mounts[p])}; unmount it if its data is "
                "not needed, or list another disk"
            )
            if p in mounts
            else None
        )

    def swap(p: str) -> str | None:
        return (
            (f"/dev/{p} is active swap; `swapoff {swaps[p]}` first if the system can do without it")
            if p in swaps
            else None
        )

    def held(p: str) -> str | None:
        who = ", ".join(describe_holder(h) for h in holders_of(p))
        return (
            (
                f"/dev/{p} is used by {who}; remove that first (lvchange -an / vgremove, "
                "mdadm --stop, …) or list another disk"
            )
            if who
            else None
        )

    def btrfs(p: str) -> str | None:
        return (
            (
                f"/dev/{p} belongs to the mounted btrfs {members[p]}; unmount it first or "
                "list another disk"
            )
            if p in members
            else None
        )

    def busy(p: str) -> str | None:
        return (
            (
                f"the kernel holds /dev/{p} open exclusively (see lsblk and fuser -v); free "
                "it first or list another disk"
            )
            if _exclusive_open_fails(f"/dev/{p}")
            else None
        )

    checks: list[tuple[str, Callable[[str], str | None]]] = [
        (MOUNTED, mounted),
        (SWAP_ACTIVE, swap),
        (HOLDERS, held),
        (BTRFS_MEMBER, btrfs),
        (BUSY, busy),
    ]
    for rule, finding in checks:
        for part in family:
            detail = finding(part)
            if detail:
                yield rule, detail


def _in_use(listed: str, name: str) -> Iterator[UnsafeDevice]:
    """Refusals that no option overrides, most specific first."""
    yield from _whole(listed, name)
    for rule, detail in _parts_in_use(_family(name)):
        yield UnsafeDevice(listed, rule, detail)


def read_signatures(node: str) -> tuple[list[Signature], str | None]:
    """Signatures on one device node, or why they could not be read (`wipefs --no-act`
    reads the device, never writes it)."""
    done = proc.run([require("wipefs"), "--no-act", "--json", node], timeout=60, check=False)
    if done.returncode != 0:
        return [], " | ".join(done.stderr.strip().splitlines()[-2:]) or f"exit {done.returncode}"
    return parse_wipefs(done.stdout), None


def _content(listed: str, signatures: list[Signature]) -> Iterator[UnsafeDevice]:
    for sig in signatures:
        rule = content_rule(sig)
        yield UnsafeDevice(listed, rule, f"found {sig}; {_WIPE_FIX}")


def assess(path: str, *, wipe: bool = False) -> tuple[DeviceFacts | None, list[UnsafeDevice]]:
    """Every refusal that applies to `path` (first = the one `check` raises), and the facts."""
    name = block_name(path)
    if name is None:
        return None, [
            UnsafeDevice(
                path,
                NOT_BLOCK,
                "it does not exist or is not a block "
                "device; list disks by stable id (ls -l /dev/disk/by-id/)",
            )
        ]
    refusals = list(_in_use(path, name))
    if refusals:  # never probe a device the system uses (the root disk may not even open)
        return None, refusals
    signatures: list[Signature] = []
    for part in _family(name):
        found, error = read_signatures(f"/dev/{part}")
        if error is not None:
            return None, [
                UnsafeDevice(
                    path,
                    UNREADABLE,
                    f"wipefs cannot read /dev/{part} "
                    f"({error}); volbench only writes to disks it could "
                    "inspect",
                )
            ]
        signatures += found
    if not wipe:
        refusals = list(_content(path, signatures))
    size = int(procfs.read_text(SYS_BLOCK / name / "size").strip() or 0) * 512
    facts = DeviceFacts(path, f"/dev/{name}", size, tuple(partitions_of(name)), tuple(signatures))
    return facts, refusals


def check(path: str, *, wipe: bool = False) -> DeviceFacts:
    """Pass `path` or raise UnsafeDevice naming the first rule that refuses it."""
    facts, refusals = assess(path, wipe=wipe)
    if refusals:
        raise refusals[0]
    assert facts is not None
    return facts


def wipe_signatures(recipe: Recipe, facts: DeviceFacts) -> None:
    """Erase what `check(…, wipe=True)` found: partitions' signatures first, then the disk's.

    Only called for disks the experiment marked `wipe: true` and that passed every
    in-use rule just before.
    """
    if not facts.signatures:
        return
    wipefs = require("wipefs")
    for part in facts.partitions:
        recipe.run([wipefs, "--all", "--quiet", f"/dev/{part}"], timeout=60)
    recipe.run([wipefs, "--all", "--quiet", facts.node], timeout=60)
    if facts.partitions:
        # The partition table is gone: make the kernel drop the partition devices too.
        recipe.run(["blockdev", "--rereadpt", facts.node], timeout=60)
