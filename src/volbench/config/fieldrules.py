"""What an experiment file may name and how big it may make things.

Names become directory names, cgroup names and journal entries, so they get a
charset that is safe in all of them; paths that volbench writes into must not be
`/` or a system directory; counts get upper bounds so that a typo such as
`repeat: 100000000` is refused at once instead of planning for ever.
docs/experiments.md lists every rule for users.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

NAME_MAX = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The same rule as one JSON Schema pattern (`volbench schema`).
NAME_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}$"

# Upper bounds of counts. Far above anything a benchmark needs, low enough that a
# typo (an extra zero or three) is caught before planning allocates millions of runs.
MAX_REPEAT = 1000
MAX_WARMUP = 100
MAX_NUMJOBS = 1024
MAX_IODEPTH = 4096
MAX_CASES = 10_000  # cases of one workload (the product of its matrix axes)
MAX_RUNS = 100_000  # planned runs of one experiment (targets x cases x rounds)

# Directories volbench never works in, nor anywhere below them: the system itself and
# the kernel's virtual filesystems.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                "/proc", "/sbin", "/sys", "/usr")
# Directories that hold other people's things: refused themselves, fine below them
# (/var/tmp/volbench is the default work directory, /srv/bench a usual target).
SYSTEM_DIRS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/var",
               "/var/cache", "/var/lib", "/var/log", "/var/spool")


def name_problem(name: str) -> str | None:
    """Why `name` is not a usable name of a target, workload or experiment (None: it is)."""
    if not name:
        return "must not be empty"
    if len(name) > NAME_MAX:
        return f"is {len(name)} characters long, at most {NAME_MAX} are allowed"
    if not _NAME.fullmatch(name):
        return (f"'{name}' must start with a letter or digit and use only letters, digits, "
                "'-', '_' and '.'")
    return None


def absolute(text: str, base: Path | None) -> Path:
    """`text` as an absolute, normalized path; a relative one is taken from `base` (the
    experiment file's folder), else from the current directory."""
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = (base if base is not None else Path.cwd()) / path
    return Path(os.path.normpath(path))


def system_problem(path: Path) -> str | None:
    """Why volbench must not work in `path` (None: it may). Checked as written and with
    symbolic links resolved, so neither /lib/x nor a link to /etc gets through."""
    for candidate in dict.fromkeys((str(path), os.path.realpath(path))):
        if candidate in SYSTEM_DIRS or candidate in SYSTEM_TREES:
            return f"{path} is a system directory; volbench creates and removes files there"
        for tree in SYSTEM_TREES:
            if candidate.startswith(tree + "/"):
                return (f"{path} lies in the system directory {tree}; volbench creates and "
                        "removes files there")
    return None
