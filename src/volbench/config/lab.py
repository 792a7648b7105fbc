"""The `lab:` section of an experiment: the VM's disks, their speed classes, its size.

    lab:
      disks:
        - {name: d1, size: 2G, class: standard}     # /dev/disk/by-id/virtio-d1 in the guest
        - {name: f, count: 2, size: 2G, class: fast}  # f1, f2
      classes:                                      # added to (or replacing) the defaults
        standard: {iops: 500, bps: 50M}
        fast: {iops: 2000, bps: 200M}
      memory: 2G
      cpus: 2
      accel: tcg              # tcg (software emulation, works everywhere) or kvm
      boot_timeout: 3m        # until the guest runs its first command
      timeout: 1h             # the whole VM run
      modules: [dm-mod, …]    # loaded in the guest before the command (replaces the default)

A class caps each of its disks in QEMU (throttling.* of -drive): `iops`/`bps`
cap reads and writes together, `read_iops`/`write_iops`/`read_bps`/`write_bps`
each direction. The cap is exact and repeatable as long as the emulated CPU can
go faster than the cap: under TCG it tops out near 10k IOPS, so caps stay at or
below MAX_TCG_IOPS.

A class also says what a flush costs (`write_cache`):
- `write-through` (default): the disk has no volatile cache, like power-loss-protected
  SSDs, battery-backed controllers and many cloud volumes: the guest sees "write
  through", sends no flushes, and a write counts as durable when it completes. The
  lab's images are throwaway, so QEMU skips the host fdatasync it would otherwise do per
  write. A class then differs from another by its caps and nothing else.
- `write-back`: the guest sees a volatile write cache and sends flushes (every fsync; a
  linear LV sends one to each of its disks); QEMU turns each into an fdatasync of the
  image file on the host's own disk. What that costs is the host's business, not the
  class's: ~0.1 ms on this project's machines, nothing to see on one disk, but an fsync on
  an LV over 25 disks waits for 25 of them (fio 4k writes with an fsync each: 503 IOPS
  write-through, 205 write-back), and it varies with the host's load. Choose it to study
  flushes (examples/seed000-flush-fanout.yaml).
- `lying`: a volatile write cache that acknowledges flushes without doing them, as
  some consumer drives and controllers do: the guest sees "write back" and sends
  flushes, which cost nothing (QEMU skips them, cache.no-flush). Under a power cut
  (docs/durability.md) such a disk keeps only what it had written back at its own last
  write-back, which it does every `writeback` seconds (default 5 s), whatever the
  flushes said.
Seed 000's LVM over 25 disks is where this decides the result (docs/seeds.md).

A class may burst like a cloud disk on credits: `burst_iops` (or `burst_bps`, or the
per-direction `burst_read_iops` …) above its cap, from a bucket of `burst_seconds`
(QEMU's `throttling.iops-total-max` and `…-max-length`). QEMU's bucket fills at the burst
rate minus the cap, so a full burst lasts burst * burst_seconds / (burst - cap) seconds
from an idle disk, and an idle disk earns it back in burst * burst_seconds / cap seconds
(measured, docs/lab.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volbench.config.fields import Reader
from volbench.config.sections import Items, Named, Section
from volbench.config.spec import Duration, Field, Integer, Size, Text, TextList

GiB = 1024**3
# Under software emulation the guest's CPU, not the cap, would set the speed above this.
MAX_TCG_IOPS = 5000
# virtio-blk serial numbers hold at most 20 bytes (VIRTIO_BLK_ID_BYTES).
MAX_NAME = 20
MAX_DISKS = 62  # two PCI bridges of 31 slots
ACCELS = ("tcg", "kvm")
# Loaded before the command: what the LVM, md, NFS and iSCSI targets need first.
# Others load on first use (filesystems on mount, md personalities, dm targets), and
# each module costs ~0.5 s of boot under emulation, so the list stays short.
# `loop` too: Debian builds it as a module, and without it (no static /dev/loop-control in
# the guest to autoload it) `image` and `loopdisk` targets fail with "cannot find an
# unused loop device" (seed 003's datastore images did, until it was added).
DEFAULT_MODULES = (
    "dm-mod", "dm-thin-pool", "raid0", "raid1", "xfs", "nfsd", "iscsi_tcp", "loop",
)
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
WRITE_BACK, WRITE_THROUGH, LYING = "write-back", "write-through", "lying"
WRITE_CACHES = (WRITE_BACK, WRITE_THROUGH, LYING)
# How often a lying disk writes its cache back by itself (its only real write-back).
DEFAULT_WRITEBACK_S = 5.0
CAP_KEYS = ("iops", "read_iops", "write_iops", "bps", "read_bps", "write_bps")
# Each burst rate raises the cap of the same name: burst_iops over iops, …
BURST_KEYS = tuple(f"burst_{k}" for k in CAP_KEYS)
# QEMU's -drive throttling names for each cap.
_QEMU_NAMES = {
    "iops": "iops-total",
    "read_iops": "iops-read",
    "write_iops": "iops-write",
    "bps": "bps-total",
    "read_bps": "bps-read",
    "write_bps": "bps-write",
}


@dataclass(frozen=True)
class DiskClass:
    """Caps for every disk of a class (None = uncapped in that respect), and its flushes."""

    name: str
    iops: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None
    bps: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None
    write_cache: str = field(default=WRITE_THROUGH, kw_only=True)
    # Burst rates, by the cap they raise ("iops" -> 2500), and the bucket in seconds.
    bursts: Mapping[str, int] = field(default_factory=dict, kw_only=True)
    burst_seconds: int | None = field(default=None, kw_only=True)
    # A lying disk's own write-back period, seconds (the only time it makes data durable).
    writeback_s: float = field(default=DEFAULT_WRITEBACK_S, kw_only=True)

    @property
    def skips_flushes(self) -> bool:
        """QEMU never runs this class's flushes: none arrive (write-through) or they are
        acknowledged and dropped (lying)."""
        return self.write_cache in (WRITE_THROUGH, LYING)

    def caps(self) -> dict[str, int]:
        """The caps, then the burst rates and their length (recorded with the disks)."""
        caps = {k: v for k in CAP_KEYS if (v := getattr(self, k)) is not None}
        caps |= {f"burst_{k}": v for k, v in self.bursts.items()}
        if self.burst_seconds is not None and self.bursts:
            caps["burst_seconds"] = self.burst_seconds
        return caps

    def cache_facts(self) -> dict[str, Any]:
        """The write cache as recorded with the disks: the mode, and a lying disk's
        write-back period."""
        facts: dict[str, Any] = {"write_cache": self.write_cache}
        if self.write_cache == LYING:
            facts["writeback_s"] = self.writeback_s
        return facts

    def qemu_cache(self) -> list[str]:
        """`-drive` cache options: O_DIRECT on the image either way (the host's page cache
        stays out of every measurement); a write-through disk's flushes never reach the
        host's disk (cache.no-flush), or QEMU would fdatasync after every write."""
        if self.skips_flushes:
            return ["cache.direct=on", "cache.no-flush=on"]
        return ["cache=none"]

    def qemu_device(self) -> list[str]:
        """virtio-blk properties: a write-through disk offers neither a write cache nor
        the guest's switch to turn one on (config-wce), so the guest sends no flushes."""
        if self.write_cache == WRITE_THROUGH:
            return ["write-cache=off", "config-wce=off"]
        if self.write_cache == LYING:
            return ["write-cache=on"]
        return []

    def qemu_throttling(self) -> list[str]:
        """`-drive` options that make QEMU enforce the caps and bursts."""
        opts = [
            f"throttling.{_QEMU_NAMES[k]}={v}"
            for k in CAP_KEYS
            if (v := getattr(self, k)) is not None
        ]
        for key, rate in self.bursts.items():
            opts.append(f"throttling.{_QEMU_NAMES[key]}-max={rate}")
            opts.append(f"throttling.{_QEMU_NAMES[key]}-max-length={self.burst_seconds or 1}")
        return opts


def _cap(key: str, burst: bool = False) -> Field[Any]:
    what = ("the burst rate above " if burst else "cap: ") + key.replace("_", " ")
    name = f"burst_{key}" if burst else key
    if key.endswith("bps"):
        return Size(name, None, positive=True, help=f"{what} (bytes/s, e.g. 50M)")
    return Integer(name, None, minimum=1, help=what)


WRITE_CACHE = Text("write_cache", WRITE_THROUGH, choices=WRITE_CACHES,
                   help="write-back: the guest sees a volatile cache and sends flushes; "
                   "lying: it acknowledges them without doing them")
WRITEBACK = Duration("writeback", None, when=("write_cache", (LYING,)),
                     help="a lying disk's own write-back period (5s): all it makes durable")
BURST_SECONDS = Integer("burst_seconds", None, minimum=1,
                        help="how long a full burst bucket lasts at the burst rate")
CLASS_FIELDS: tuple[Field[Any], ...] = (
    *(_cap(k) for k in CAP_KEYS), *(_cap(k, burst=True) for k in CAP_KEYS), BURST_SECONDS,
    WRITE_CACHE, WRITEBACK)
DISK_NAME = Text("name", help="the disk's name: /dev/disk/by-id/virtio-NAME in the guest")
COUNT = Integer("count", 1, minimum=1, maximum=MAX_DISKS,
                help="this many disks, NAME1, NAME2 …")
DISK_SIZE = Size("size", "1G", help="each disk's size (at least 16M)")
DISK_CLASS = Text("class", "standard", help="its class: standard, fast or one of classes:")
ACCEL = Text("accel", "tcg", choices=ACCELS,
             help="tcg: software emulation (works everywhere); kvm where KVM works")
MEMORY = Size("memory", "2G", help="the guest's memory (at least 512M)")
CPUS = Integer("cpus", 2, minimum=1, maximum=64, help="the guest's CPUs")
BOOT_TIMEOUT = Duration("boot_timeout", "3m", positive=True,
                        help="until the guest runs its first command")
TIMEOUT = Duration("timeout", "1h", positive=True, help="the whole VM run")
MODULES = TextList("modules", list(DEFAULT_MODULES),
                   help="kernel modules loaded before the command (replaces the default)")
LAB = Section("lab", None, help="the lab VM: its disks, their classes, its size (docs/lab.md)",
              fields=(
                  Items("disks", [], fields=(DISK_NAME, COUNT, DISK_SIZE, DISK_CLASS),
                        help="the VM's disks"),
                  Named("classes", None, each=CLASS_FIELDS, names=_NAME.pattern,
                        help="disk classes: caps, bursts, write cache (added to standard "
                        "and fast)"),
                  MEMORY, CPUS, ACCEL, BOOT_TIMEOUT, TIMEOUT, MODULES))


DEFAULT_CLASSES: Mapping[str, DiskClass] = {
    "standard": DiskClass("standard", iops=500, bps=50 * 1024**2),
    "fast": DiskClass("fast", iops=2000, bps=200 * 1024**2),
}


@dataclass(frozen=True)
class LabDisk:
    name: str
    size: int = GiB
    disk_class: str = "standard"

    @property
    def by_id(self) -> str:
        """Where the disk appears in the guest (udev names it after the virtio serial)."""
        return f"/dev/disk/by-id/virtio-{self.name}"


@dataclass(frozen=True)
class LabSpec:
    disks: tuple[LabDisk, ...] = ()
    classes: Mapping[str, DiskClass] = field(default_factory=lambda: dict(DEFAULT_CLASSES))
    memory: int = 2 * GiB
    cpus: int = 2
    accel: str = "tcg"
    boot_timeout: float = 180.0
    timeout: float = 3600.0
    modules: tuple[str, ...] = DEFAULT_MODULES

    def disk_class(self, disk: LabDisk) -> DiskClass:
        return self.classes[disk.disk_class]

    def disk(self, name: str) -> LabDisk:
        return next(d for d in self.disks if d.name == name)

    def describe(self) -> dict[str, Any]:
        """What gets recorded: every disk with its class caps, and the VM's size."""
        return {
            "disks": [
                {
                    "name": d.name,
                    "size": d.size,
                    "class": d.disk_class,
                    "device": d.by_id,
                    "caps": self.disk_class(d).caps(),
                    **self.disk_class(d).cache_facts(),
                }
                for d in self.disks
            ],
            "memory": self.memory,
            "cpus": self.cpus,
            "accel": self.accel,
        }


def _optional(r: Reader, key: str, rate: bool) -> int | None:
    if not r.has(key):
        return None
    value = r.size(key) if rate else r.integer(key, minimum=1)
    if value < 1:
        r.problem(key, "must be positive")
    return value


def _bursts(r: Reader, caps: Mapping[str, int | None]) -> tuple[dict[str, int], int | None]:
    """Burst rates by the cap they raise, and the bucket's length, checked against the caps.

    QEMU refuses a burst without a cap under it or below it; a burst without a length would
    be QEMU's 1-second default, which no one means, so the length is required.
    """
    bursts: dict[str, int] = {}
    for key in CAP_KEYS:
        rate = _optional(r, f"burst_{key}", rate=key.endswith("bps"))
        if rate is None:
            continue
        base = caps[key]
        if base is None:
            r.problem(f"burst_{key}", f"a burst rises above a cap, and {key} is not set",
                      f"set {key}, the sustained rate, or remove burst_{key}")
        elif rate <= base:
            r.problem(f"burst_{key}", f"{rate} must be above {key}, {base}",
                      f"raise burst_{key}, or remove it for a flat disk")
        bursts[key] = rate
    length: int | None = None
    if r.has("burst_seconds"):
        length = r.get(BURST_SECONDS)
        if not bursts:
            r.problem("burst_seconds", "a burst length without a burst rate",
                      "add burst_iops or burst_bps, or remove burst_seconds")
    elif bursts:
        r.problem(next(f"burst_{k}" for k in bursts), "a burst needs its length",
                  "add burst_seconds: how long a full bucket lasts at the burst rate")
    return bursts, length


def _disk_class(r: Reader, name: str, accel: str) -> DiskClass:
    caps = {k: _optional(r, k, rate=k.endswith("bps")) for k in CAP_KEYS}
    bursts, length = _bursts(r, caps)
    write_cache = r.get(WRITE_CACHE)
    writeback = DEFAULT_WRITEBACK_S
    if r.has("writeback"):
        writeback = r.get(WRITEBACK)
        if write_cache != LYING:
            r.problem("writeback", "only a lying disk has a write-back period of its own",
                      "set write_cache: lying, or remove writeback")
        elif not 0.1 <= writeback <= 3600:
            r.problem("writeback", f"{writeback:g} s is not between 0.1 s and 1 h",
                      "e.g. writeback: 5s")
    cls = DiskClass(
        name,
        *caps.values(),
        write_cache=write_cache,
        bursts=bursts,
        burst_seconds=length,
        writeback_s=writeback,
    )
    r.finish()
    for total, parts in (("iops", ("read_iops", "write_iops")), ("bps", ("read_bps", "write_bps"))):
        if getattr(cls, total) is not None and any(getattr(cls, p) is not None for p in parts):
            r.problem(
                total,
                f"QEMU takes either {total} or {' / '.join(parts)}, not both",
                f"remove {total} or the per-direction caps",
            )
    if accel == "tcg":
        for key in ("iops", "read_iops", "write_iops"):
            # A burst is the highest rate the disk runs at: that is what the CPU must drive.
            value = cls.bursts.get(key, getattr(cls, key))
            if value is not None and value > MAX_TCG_IOPS:
                r.problem(
                    f"burst_{key}" if key in cls.bursts else key,
                    f"{value} is more than the emulated CPU can drive (it tops out "
                    "near 10k IOPS, so the CPU and not the cap would set the speed)",
                    f"keep caps at or below {MAX_TCG_IOPS}, or use accel: kvm where KVM works",
                )
    return cls


def _classes(r: Reader, accel: str) -> dict[str, DiskClass]:
    classes = dict(DEFAULT_CLASSES)
    if not r.has("classes"):
        return classes
    cr = r.sub("classes")
    for key in list(cr.data):
        name = str(key)
        if not _NAME.match(name):
            cr.problem(name, "class names may only use letters, digits, '-' and '_'")
        classes[name] = _disk_class(cr.sub(name), name, accel)
    return classes


def _disks(r: Reader, classes: Mapping[str, DiskClass]) -> tuple[LabDisk, ...]:
    disks: list[LabDisk] = []
    for item in r.items("disks", []):
        name = item.get(DISK_NAME)
        count = item.get(COUNT)
        size = item.get(DISK_SIZE)
        if size < 16 * 1024**2:
            item.problem("size", "must be at least 16M")
        cls = item.get(DISK_CLASS)
        if cls not in classes:
            item.problem("class", f"unknown class '{cls}'", f"classes are: {', '.join(classes)}")
        names = [name] if not item.has("count") else [f"{name}{i}" for i in range(1, count + 1)]
        if name and not _NAME.match(name):
            item.problem(
                "name",
                f"'{name}' may only use letters, digits, '-' and '_' "
                "(it becomes the disk's serial number)",
            )
        longest = max(names, key=len, default="")  # count: 0 has no names (refused above)
        if len(longest) > MAX_NAME:
            item.problem(
                "name",
                f"'{longest}' is longer than {MAX_NAME} characters (a virtio "
                "serial number holds 20)",
                "use a shorter name",
            )
        for n in names:
            if any(d.name == n for d in disks):
                item.problem("name", f"disk '{n}' is defined twice", "give every disk its own name")
            disks.append(LabDisk(n, size, cls))
        item.finish()
    if len(disks) > MAX_DISKS:
        r.problem("disks", f"{len(disks)} disks; the lab holds at most {MAX_DISKS}")
    return tuple(disks)


def parse(r: Reader) -> LabSpec:
    """The `lab:` mapping (already a Reader at that path)."""
    accel = r.get(ACCEL)
    classes = _classes(r, accel)
    disks = _disks(r, classes)
    memory = r.get(MEMORY)
    if memory < 512 * 1024**2:
        r.problem("memory", "must be at least 512M (the guest runs udev, LVM, PostgreSQL …)")
    boot_timeout = r.get(BOOT_TIMEOUT)
    timeout = r.get(TIMEOUT)
    for key, value in (("boot_timeout", boot_timeout), ("timeout", timeout)):
        if value <= 0:
            r.problem(key, "must be longer than 0 s")
    spec = LabSpec(
        disks,
        classes,
        memory,
        r.get(CPUS),
        accel,
        boot_timeout,
        timeout,
        tuple(r.get(MODULES)),
    )
    r.finish()
    return spec


def parse_section(r: Reader) -> LabSpec | None:
    """The experiment's top-level `lab:` section (`r` reads the whole document), or None."""
    if not r.has("lab"):
        return None
    return parse(r.get(LAB))


def referenced_disks(document: Any) -> set[str]:
    """Lab disk names that the experiment's targets list (/dev/disk/by-id/virtio-NAME)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and value.startswith("/dev/disk/by-id/virtio-"):
            found.add(value.removeprefix("/dev/disk/by-id/virtio-"))
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    if isinstance(document, Mapping):
        walk(document.get("targets", []))
    return found
