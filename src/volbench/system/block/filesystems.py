"""Making and mounting the filesystems targets put on their devices."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader
from volbench.config.spec import Field, Text, TextList
from volbench.system.block.mounts import mount
from volbench.system.host.tools import require
from volbench.system.journal import Scope
from volbench.system.recipe import Recipe

FILESYSTEMS = ("xfs", "ext4", "btrfs", "none")


@dataclass(frozen=True)
class FsSpec:
    fs: str
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()

    @property
    def mounted(self) -> bool:
        return self.fs != "none"


FS = Text("fs", "xfs", choices=FILESYSTEMS, help="the filesystem made on the device; none: "
                                                 "the raw device")
MKFS_OPTIONS = TextList("mkfs_options", [], help="more mkfs arguments")
MOUNT_OPTIONS = TextList("mount_options", [], help="mount -o options")


def fs_fields(default: str = FS.default) -> tuple[Field[Any], ...]:
    """The filesystem fields of a target type whose default filesystem is `default`."""
    return (FS.defaulting(default), MKFS_OPTIONS, MOUNT_OPTIONS)


def parse_fs(r: Reader, default: str = FS.default) -> FsSpec:
    return FsSpec(
        fs=r.get(FS.defaulting(default)),
        mkfs_options=tuple(r.get(MKFS_OPTIONS)),
        mount_options=tuple(r.get(MOUNT_OPTIONS)),
    )


def mkfs_argv(fs: str, devices: list[str], options: tuple[str, ...]) -> list[str]:
    # No force flags (-f/-F): the devices are fresh, and mkfs refusing an existing
    # signature is one more guard against formatting the wrong disk. ext4 gets -F
    # only to skip its interactive "proceed anyway?" question on whole devices, and
    # only after the device guard has checked there is no signature.
    if fs == "xfs":
        return [require("mkfs.xfs"), "-q", *options, *devices]
    if fs == "ext4":
        return [require("mkfs.ext4"), "-q", "-F", *options, *devices]
    if fs == "btrfs":
        return [require("mkfs.btrfs"), "-q", *options, *devices]
    raise ValueError(f"no mkfs for {fs}")


def make_and_mount(scope: Scope, recipe: Recipe, spec: FsSpec, devices: list[str],
                   mountpoint: Path, extra_mkfs: tuple[str, ...] = ()) -> Path:
    recipe.run(mkfs_argv(spec.fs, devices, extra_mkfs + spec.mkfs_options), timeout=600)
    return mount(scope, recipe, devices[0], mountpoint, fstype=spec.fs,
                 options=spec.mount_options)
