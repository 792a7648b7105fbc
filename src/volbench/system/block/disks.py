"""How a target gets its N block devices: fresh loop disks, or disks the user lists.

One experiment syntax and one call for every target built on whole disks (disk,
lvm, mdraid …):

    disks: 2            # N fresh image files on loop devices (direct I/O) …
    size: 1G
    preallocate: false

    devices:            # … or real disks, listed by stable id
      - /dev/disk/by-id/virtio-d1
      - {path: /dev/disk/by-id/virtio-d2, wipe: true}
    wipe: false         # default for every listed disk

Listed disks pass the device guard (guard.py) *all of them before any is
written*; a disk marked `wipe: true` may carry old signatures, which are erased
with `wipefs --all` (recorded in the recipe) once every in-use rule has passed.
Loop disks made from fresh images are exempt: they cannot hold anyone's data.

A target module uses it like this:

    SOURCE = disks.SourceRules(default_count=2)               # its rules, once
    source = disks.parse_source(r, SOURCE)                    # in parse()
    found = disks.provide(ctx.scope, ctx.recipe, source, ctx.workdir)   # in build()
    devices = [d.device for d in found]
    KIND = TargetKind(..., loop_devices=lambda s: s.source.loop_devices,
                      disk_space=lambda s: s.source.disk_space,
                      fields=(..., *SOURCE.fields()))
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from volbench.config.fields import Reader
from volbench.config.sections import object_schema
from volbench.config.spec import Boolean, Field, Integer, Size, Text
from volbench.core.errors import Problem, UnsafeDevice
from volbench.system.block import guard
from volbench.system.block.devices import attach_loop, create_image
from volbench.system.journal import Scope
from volbench.system.recipe import Recipe

# Names that survive a reboot and a re-cabling; /dev/sdX does not.
STABLE_PREFIXES = ("/dev/disk/by-id/", "/dev/disk/by-path/")
# Loop devices are accepted as well, for trying things on a machine without spare
# disks (attach them yourself: they are not volbench's fresh images, so the guard checks them).
_LOOP = re.compile(r"^/dev/loop\d+$")
GiB = 1024**3


@dataclass(frozen=True)
class ListedDisk:
    path: str
    wipe: bool = False


@dataclass(frozen=True)
class DiskSource:
    """Where a target's disks come from: `listed` devices, else `count` fresh loop disks."""

    listed: tuple[ListedDisk, ...] = ()
    count: int = 1
    size: int = GiB
    preallocate: bool = False

    @property
    def is_listed(self) -> bool:
        return bool(self.listed)

    @property
    def n(self) -> int:
        return len(self.listed) if self.listed else self.count

    @property
    def loop_devices(self) -> int:
        return 0 if self.listed else self.count

    @property
    def disk_space(self) -> int:
        return 0 if self.listed else self.count * self.size


@dataclass(frozen=True)
class Disk:
    """One device a target got: the node it writes to and where it came from."""

    device: str
    source: str  # "listed" or "loop"
    listed: str | None = None
    image: str | None = None
    size: int = 0
    # Signatures erased because the experiment said `wipe: true` for this disk.
    wiped: tuple[str, ...] = ()

    def as_info(self) -> dict[str, Any]:
        info = {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, ())}
        info["wiped"] = list(self.wiped)
        return info


def stable_problem(path: str) -> str | None:
    """Why a listed device name is not acceptable (None when it is)."""
    if path.startswith(STABLE_PREFIXES) or _LOOP.match(path):
        return None
    return (
        f"'{path}' is not a stable name: /dev/sdX and friends change between boots; "
        "list the disk as /dev/disk/by-id/… (ls -l /dev/disk/by-id/ shows which id "
        "points to it; in the lab: /dev/disk/by-id/virtio-NAME)"
    )


WIPE = Boolean("wipe", False, help="erase old signatures of the listed disks (docs/safety.md); "
                                   "the default of every listed disk")
DEVICE = Text("device", None, help="one disk by stable name: the same as devices: [PATH]")
PREALLOCATE = Boolean("preallocate", False, help="fresh loop disks: write the images fully first")
PATH = Text("path", help="the disk by stable name (/dev/disk/by-id/…)")
# One entry of devices: written as a mapping.
ENTRY = (PATH, WIPE)


@dataclass(frozen=True)
class Devices(Field[list[ListedDisk]]):
    """Disks by stable name: paths, or {path, wipe} mappings (`wipe:` beside them is their
    default)."""

    what: ClassVar[str] = "list of disks"

    def read(self, r: Reader) -> list[ListedDisk]:
        return _listed(r, r.get(WIPE))

    def values(self) -> dict[str, Any]:
        """A non-empty list of paths or {path, wipe} mappings."""
        entry = {"anyOf": [{"type": "string"}, object_schema(ENTRY)]}
        return {"type": "array", "items": entry, "minItems": 1}


DEVICES = Devices("devices", None, help="disks by stable name (/dev/disk/by-id/…), or "
                                        "{path, wipe}")


@dataclass(frozen=True)
class SourceRules:
    """How many disks a target type takes, and whether fresh loop disks will do."""

    default_count: int = 1
    minimum: int = 1
    maximum: int = 64
    allow_loop: bool = True
    default_size: str = "1G"
    min_size: int = 16 * 1024**2

    @property
    def disks(self) -> Integer:
        return Integer("disks", self.default_count, minimum=self.minimum,
                       maximum=self.maximum, help="fresh loop disks (without devices:)")

    @property
    def size(self) -> Size:
        return Size("size", self.default_size, help="size of each fresh loop disk")

    def fields(self) -> tuple[Field[Any], ...]:
        """The fields parse_source reads under these rules."""
        listed: tuple[Field[Any], ...] = (DEVICES, WIPE)
        return (*listed, self.disks, self.size, PREALLOCATE) if self.allow_loop else listed


def _listed(r: Reader, wipe_default: bool) -> list[ListedDisk]:
    value = r.raw(DEVICES.name, None)
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        r.problem(
            "devices",
            "expected a non-empty list of device paths",
            "e.g. devices: [/dev/disk/by-id/virtio-d1]",
        )
        return []
    found: list[ListedDisk] = []
    for i, item in enumerate(value):
        where = f"devices[{i}]"
        if isinstance(item, dict):
            sub = Reader(item, r.at(where), r.problems, declared=ENTRY)
            disk = ListedDisk(sub.get(PATH), sub.get(WIPE.defaulting(wipe_default)))
            sub.finish()
        elif isinstance(item, str):
            disk = ListedDisk(item, wipe_default)
        else:
            r.problem(where, f"expected a path or {{path, wipe}}, got {item!r}")
            continue
        why = stable_problem(disk.path) if disk.path else None
        if why:
            r.problem(where, why)
        if any(d.path == disk.path for d in found):
            r.problem(where, f"{disk.path} is listed twice", "list each disk once")
        found.append(disk)
    return found


def parse_source(r: Reader, rules: SourceRules = SourceRules(), **overrides: Any
                 ) -> DiskSource:
    """Read `devices`/`wipe` or `disks`/`size`/`preallocate` from a target's fields.
    Keyword arguments (default_count=2, allow_loop=False …) override fields of `rules`."""
    rules = dataclasses.replace(rules, **overrides)
    minimum, maximum = rules.minimum, rules.maximum
    wipe = r.get(WIPE)
    listed = _listed(r, wipe)
    if listed:
        if r.has("disks") and r.integer("disks") != len(listed):
            r.problem(
                "disks",
                f"says {r.data['disks']} but devices lists {len(listed)}",
                "remove disks: (the list decides) or make them agree",
            )
        for key in ("size", "preallocate"):
            if r.has(key):
                r.raw(key)
                r.problem(
                    key,
                    "applies to file-backed loop disks only; a listed disk is used whole",
                    f"remove {key}: or the devices list",
                )
        if not minimum <= len(listed) <= maximum:
            r.problem("devices", f"this target takes {minimum}..{maximum} disks, got {len(listed)}")
        return DiskSource(tuple(listed), count=len(listed))
    if not rules.allow_loop:
        r.problem(
            "devices",
            "is required: this target is made on disks you list",
            "e.g. devices: [/dev/disk/by-id/virtio-d1]; without spare disks use "
            "type: loopdisk, or the lab (volbench lab run)",
        )
        return DiskSource()
    if r.has("wipe"):
        r.problem(
            "wipe",
            "applies to listed devices only (fresh loop disks are empty)",
            "remove wipe: or list devices",
        )
    count = r.get(rules.disks)
    size = r.get(rules.size)
    if r.has("size") and size < rules.min_size:
        r.problem("size", f"must be at least {rules.min_size // 1024**2}M")
    return DiskSource((), count, size, r.get(PREALLOCATE))


def provide(scope: Scope, recipe: Recipe, source: DiskSource, workdir: Path,
            redirect: Mapping[str, str] | None = None) -> list[Disk]:
    """The target's devices: fresh loop disks, or listed disks that passed the guard.

    `redirect` maps a listed path to the device to use in its place (a lab disk wrapped
    for power cuts: faults/powercut.py); the disk is recorded under the path listed."""
    if not source.is_listed:
        found = []
        for i in range(source.count):
            image = create_image(
                scope, recipe, workdir / f"disk{i}.img", source.size, preallocate=source.preallocate
            )
            device = attach_loop(scope, recipe, image)
            found.append(Disk(device, "loop", image=str(image), size=source.size))
        return found
    return _provide_listed(recipe, source.listed, redirect or {})


def _provide_listed(recipe: Recipe, listed: Sequence[ListedDisk],
                    redirect: Mapping[str, str]) -> list[Disk]:
    # Every disk is checked before any is touched: a refusal of the last one must not
    # leave the first one wiped.
    checked: list[tuple[ListedDisk, guard.DeviceFacts]] = []
    for disk in listed:
        if disk.path in redirect:
            recipe.note(f"{disk.path} is used through {redirect[disk.path]} (power cuts)")
        facts = guard.check(redirect.get(disk.path, disk.path), wipe=disk.wipe)
        for other, seen in checked:
            if seen.node == facts.node:
                raise UnsafeDevice(
                    disk.path,
                    "listed twice",
                    f"it is the same disk as {other.path} ({facts.node}); list each disk once",
                )
        checked.append((disk, facts))
        recipe.note(
            f"device guard passed {disk.path} -> {facts.node}"
            + (" (wipe: true)" if disk.wipe else "")
        )
    found = []
    for disk, facts in checked:
        if disk.wipe:
            guard.wipe_signatures(recipe, facts)
        found.append(
            Disk(
                facts.node,
                "listed",
                listed=disk.path,
                size=facts.size,
                wiped=tuple(str(s) for s in facts.signatures),
            )
        )
    return found


def listed_paths(spec: object) -> list[str]:
    """Paths of listed disks in a target spec (any field holding a DiskSource)."""
    if not dataclasses.is_dataclass(spec):
        return []
    paths: list[str] = []
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, DiskSource):
            paths += [d.path for d in value.listed]
    return paths


def shared_device_problems(targets: Sequence[Any], sequential: bool) -> list[Problem]:
    """Two targets that exist at the same time cannot both own one disk."""
    if sequential:
        return []
    owner: dict[str, str] = {}
    problems = []
    for i, spec in enumerate(targets):
        for path in listed_paths(spec):
            if path in owner and owner[path] != spec.name:
                problems.append(
                    Problem(
                        f"targets[{i}].devices",
                        f"{path} is also used by target {owner[path]}",
                        "give each target its own disks, or set order: sequential",
                    )
                )
            owner.setdefault(path, spec.name)
    return problems
