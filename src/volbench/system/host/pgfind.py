"""Finding a PostgreSQL installation: the directory that holds its server programs.

Distributions put the server programs in different places, and most do not put them on
PATH: Debian and Ubuntu keep them in /usr/lib/postgresql/MAJOR/bin (only pg_wrapper's
psql and pgbench are on PATH, and they pick whichever major they like), PGDG on
RHEL-family in /usr/pgsql-MAJOR/bin, a source build or a PyPI bundle wherever it was
unpacked. So the search is, in order:

1. the pgbench workload's `pg_bin: DIR` (then nothing else: the user said which);
2. the directory of `postgres` found on PATH (resolved, so a link farm leads to the
   real directory where initdb and the libraries sit next to it);
3. `pg_config --bindir`;
4. /usr/lib/postgresql/*/bin, newest major first; then /usr/pgsql-*/bin, newest first.

A directory counts only when it holds all of PROGRAMS, so the client and the server
always come from the same installation (and the same version).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from volbench.core.errors import VolbenchError
from volbench.system import proc

PROGRAMS = ("initdb", "pg_ctl", "postgres", "psql", "pgbench")
# Distribution locations, each a glob whose `*` is the major version.
DIST_GLOBS = ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin")
# The majors volbench is written and tested for (settings, output formats, initdb flags).
SUPPORTED = range(12, 19)
INSTALL_HINT = ("install PostgreSQL with `scripts/setup --with pgbench` (Debian/Ubuntu: "
                "apt-get install postgresql; RHEL-family: dnf install postgresql-server "
                "postgresql-contrib), or give the pgbench workload `pg_bin: DIR`, the "
                "directory holding " + ", ".join(PROGRAMS))


class PostgresMissing(VolbenchError):
    """No directory with all of PostgreSQL's programs: says where it looked and how to fix."""

    def __init__(self, searched: Sequence[str], fix: str = INSTALL_HINT) -> None:
        self.searched = list(searched)
        super().__init__("PostgreSQL not found (looked at: " + "; ".join(searched) + "); "
                         + fix)


@dataclass(frozen=True)
class Install:
    """One PostgreSQL installation: where its programs are and how it was found."""

    bindir: Path
    found_by: str

    def program(self, name: str) -> str:
        return str(self.bindir / name)


def missing_programs(bindir: Path) -> list[str]:
    return [p for p in PROGRAMS if not os.access(bindir / p, os.X_OK)]


def _major_key(path: Path) -> tuple[int, ...]:
    """Sort key from the version part of /usr/lib/postgresql/16/bin or /usr/pgsql-9.6/bin."""
    m = re.search(r"(\d+(?:\.\d+)*)", path.parent.name)
    return tuple(int(x) for x in m.group(1).split(".")) if m else (-1,)


def _dist_dirs(globs: Sequence[str]) -> list[tuple[str, list[Path]]]:
    found = []
    for pattern in globs:
        root = Path(pattern.split("*")[0]).parent
        rest = pattern[len(str(root)) + 1:]
        dirs = sorted(root.glob(rest), key=_major_key, reverse=True) if root.is_dir() else []
        found.append((pattern, dirs))
    return found


def _pg_config_bindir(path: str | None) -> Path | None:
    pg_config = shutil.which("pg_config", path=path)
    if pg_config is None:
        return None
    try:
        done = proc.run([pg_config, "--bindir"], timeout=20, check=False)
    except OSError:
        return None
    text = done.stdout.strip()
    return Path(text) if done.returncode == 0 and text else None


def locate(pg_bin: Path | None = None, *, path: str | None = None,
           dist_globs: Sequence[str] | None = None) -> Install:
    """The installation to use, or PostgresMissing naming every place looked at.

    `path` stands for $PATH (None: the process's own)."""
    if pg_bin is not None:
        lacking = missing_programs(pg_bin)
        if not lacking:
            return Install(pg_bin, "pg_bin")
        raise PostgresMissing([f"pg_bin {pg_bin} (no {', '.join(lacking)})"],
                              "set pg_bin to the directory holding " + ", ".join(PROGRAMS))
    searched: list[str] = []
    server = shutil.which("postgres", path=path)
    if server is not None:
        bindir = Path(server).resolve().parent
        lacking = missing_programs(bindir)
        if not lacking:
            return Install(bindir, "PATH")
        searched.append(f"PATH: {bindir} (no {', '.join(lacking)})")
    else:
        searched.append("PATH (no postgres)")
    config_dir = _pg_config_bindir(path)
    if config_dir is not None:
        lacking = missing_programs(config_dir)
        if not lacking:
            return Install(config_dir, "pg_config --bindir")
        searched.append(f"pg_config --bindir: {config_dir} (no {', '.join(lacking)})")
    else:
        searched.append("pg_config (not on PATH)")
    for pattern, dirs in _dist_dirs(DIST_GLOBS if dist_globs is None else dist_globs):
        for bindir in dirs:
            if not missing_programs(bindir):
                return Install(bindir, pattern)
        where = ", ".join(map(str, dirs)) + " incomplete" if dirs else "none"
        searched.append(f"{pattern} ({where})")
    raise PostgresMissing(searched)


def find_program(name: str) -> str | None:
    """A PostgreSQL program of the installation `locate()` picks, or None (doctor, tools)."""
    try:
        return locate().program(name)
    except PostgresMissing:
        return None


def version(program: str) -> str:
    """'16.2' from `postgres --version` ("postgres (PostgreSQL) 16.2"), or '' if unreadable."""
    try:
        done = proc.run([program, "--version"], timeout=20, check=False)
    except OSError:
        return ""
    m = re.search(r"\(PostgreSQL\)\s+(\S+)", done.stdout)
    return m.group(1) if m else ""


def major(version_text: str) -> int | None:
    """16 for '16.2', 18 for '18beta1', 9 for '9.4.26' (old scheme: 9.4 -> 9)."""
    m = re.match(r"(\d+)", version_text)
    return int(m.group(1)) if m else None
