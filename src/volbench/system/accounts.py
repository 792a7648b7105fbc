"""A system account written into /etc/passwd and /etc/group directly: where `useradd`
cannot write /etc/shadow. In the lab guest virtme-ng bind-mounts a file of its own over
/etc/shadow, and useradd's rename of its new copy onto it fails ("failure while writing
changes to /etc/shadow"); the sandbox user needs no shadow entry (it never logs in), so
volbench writes the two lines itself, under the same lock useradd takes (lckpwdf), and
removes them the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

from volbench.core.errors import ResourceError

PASSWD, GROUP = Path("/etc/passwd"), Path("/etc/group")
# The system range useradd --system picks from (Debian's login.defs), highest first.
SYSTEM_IDS = range(999, 99, -1)
_LIBC = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """The shadow suite's lock on the account files (lckpwdf waits up to 15 s)."""
    if _LIBC.lckpwdf() != 0:
        raise ResourceError("cannot lock /etc/passwd (another program holds it); try again")
    try:
        yield
    finally:
        _LIBC.ulckpwdf()


def _ids(path: Path, column: int) -> set[int]:
    found = set()
    for line in path.read_text().splitlines():
        fields = line.split(":")
        if len(fields) > column and fields[column].isdigit():
            found.add(int(fields[column]))
    return found


def add(name: str, comment: str) -> None:
    """`name` as a system user with a group of its own, home /nonexistent, no login."""
    with _locked():
        taken = _ids(PASSWD, 2) | _ids(GROUP, 2)
        free = next((i for i in SYSTEM_IDS if i not in taken), None)
        if free is None:
            raise ResourceError("no free system user id (100-999) for the sandbox user")
        with GROUP.open("a") as f:
            f.write(f"{name}:x:{free}:\n")
        with PASSWD.open("a") as f:
            f.write(f"{name}:x:{free}:{free}:{comment}:/nonexistent:/usr/sbin/nologin\n")


def remove(name: str) -> None:
    """The lines of `name` out of /etc/passwd and /etc/group (nothing if it has none)."""
    with _locked():
        for path in (PASSWD, GROUP):
            lines = path.read_text().splitlines(keepends=True)
            kept = [line for line in lines if not line.startswith(f"{name}:")]
            if kept != lines:
                _rewrite(path, "".join(kept))


def _rewrite(path: Path, text: str) -> None:
    """A new copy renamed over the file, or, where it is a mount of its own (rename
    refused), the file rewritten in place."""
    new = path.with_name(path.name + ".volbench")
    try:
        new.write_text(text)
        os.chmod(new, path.stat().st_mode & 0o7777)
        os.replace(new, path)
    except OSError:
        new.unlink(missing_ok=True)
        path.write_text(text)
