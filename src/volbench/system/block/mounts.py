"""Mount points and mounts volbench creates (and nothing else)."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volbench.core.errors import CommandFailed
from volbench.system import proc
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe


def make_dir(scope: Scope, path: Path) -> Path:
    """A directory volbench creates and removes (only if empty) at teardown."""
    scope.add("dir", path=str(path))
    path.mkdir(parents=True, exist_ok=True)
    return path


@undoer("dir")
def _undo_dir(data: Mapping[str, Any]) -> None:
    path = Path(data["path"])
    with contextlib.suppress(FileNotFoundError):
        path.rmdir()


def make_tree(scope: Scope, path: Path) -> Path:
    """A new directory (it must not exist yet) removed *with its contents* at teardown."""
    scope.add("tree", path=str(path))
    path.mkdir(parents=True, exist_ok=False)
    return path


@undoer("tree")
def _undo_tree(data: Mapping[str, Any]) -> None:
    path = Path(data["path"])
    if not path.exists():
        return
    # Never descend into a filesystem mounted below: that would delete someone's data.
    inside = mounted_under(path)
    if inside:
        raise OSError(f"{path} still has mounts below it ({', '.join(inside)}); "
                      "unmount them first")
    shutil.rmtree(path)


def mounted_under(path: Path) -> list[str]:
    prefix = str(path.resolve()).rstrip("/") + "/"
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split(" ")
        if len(fields) > 1:
            point = fields[1].replace("\\040", " ")
            if point.startswith(prefix):
                found.append(point)
    return found


def mount(scope: Scope, recipe: Recipe, source: str, mountpoint: Path,
          *, fstype: str | None = None, options: Sequence[str] = ()) -> Path:
    make_dir(scope, mountpoint)
    scope.add("mount", mountpoint=str(mountpoint), source=source)
    argv = ["mount"]
    if fstype:
        argv += ["-t", fstype]
    if options:
        argv += ["-o", ",".join(options)]
    recipe.run([*argv, source, str(mountpoint)], timeout=120)
    return mountpoint


def is_mounted(mountpoint: Path) -> bool:
    target = str(mountpoint)
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split(" ")
        if len(fields) > 1 and fields[1].replace("\\040", " ") == target:
            return True
    return False


@undoer("mount")
def _undo_mount(data: Mapping[str, Any]) -> None:
    mountpoint = Path(data["mountpoint"])
    # A file still open (a server shutting down) makes umount busy for a moment.
    for attempt in range(10):
        if not is_mounted(mountpoint):
            return
        try:
            proc.run(["umount", str(mountpoint)], timeout=120)
            return
        except CommandFailed:
            if attempt == 9:
                raise
            time.sleep(0.5)


def mount_info(mountpoint: Path) -> dict[str, Any]:
    """findmnt's JSON for a mount point: source, fstype, options."""
    out = proc.run(["findmnt", "--json", "--target", str(mountpoint)], timeout=30,
                   check=False).stdout
    try:
        found = json.loads(out).get("filesystems", [])
    except json.JSONDecodeError:
        return {}
    return dict(found[0]) if found else {}
