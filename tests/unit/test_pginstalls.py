"""The pinned downloads of the tests' PostgreSQL 12-14 installs (tests/pginstalls.py): a
file whose SHA-256 differs from its pin is refused, a mirror without it is passed over,
and the pins themselves are well formed. file:// mirrors stand in for the archives."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import pginstalls


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    empty, full = tmp_path / "empty", tmp_path / "full"
    (full / "pool/main/x").mkdir(parents=True)
    empty.mkdir()
    monkeypatch.setitem(pginstalls.MIRRORS, "test", (empty.as_uri(), full.as_uri()))
    return empty, full


def test_the_first_mirror_that_has_the_file_serves_it(mirrors: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    data = b"a package"
    (mirrors[1] / "pool/main/x/x_1_amd64.deb").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    got = pginstalls.fetch("test", "pool/main/x/x_1_amd64.deb", sha, tmp_path / "debs")
    assert got.read_bytes() == data
    (mirrors[1] / "pool/main/x/x_1_amd64.deb").unlink()  # kept: not downloaded again
    assert pginstalls.fetch("test", "pool/main/x/x_1_amd64.deb", sha, tmp_path / "debs") == got


def test_a_file_that_differs_from_its_pin_is_refused(mirrors: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    (mirrors[1] / "pool/main/x/x_1_amd64.deb").write_bytes(b"something else")
    with pytest.raises(RuntimeError, match=r"SHA-256 [0-9a-f]{64}, pinned 0{64}"):
        pginstalls.fetch("test", "pool/main/x/x_1_amd64.deb", "0" * 64, tmp_path / "debs")
    assert not (tmp_path / "debs" / "x_1_amd64.deb").exists()


def test_no_mirror_has_it(mirrors: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"could not download pool/main/x/gone\.deb: .*empty"):
        pginstalls.fetch("test", "pool/main/x/gone.deb", "0" * 64, tmp_path / "debs")


def test_every_pin_names_a_pool_deb_of_its_major_and_a_sha256() -> None:
    assert set(pginstalls.BUNDLES).isdisjoint(pginstalls.DEBS)
    for major, debs in pginstalls.DEBS.items():
        names = [Path(pool).name for _, pool, _ in debs]
        assert f"postgresql-{major}_" in " ".join(names)
        assert f"postgresql-client-{major}_" in " ".join(names)
        assert any(n.startswith("libpq5_") for n in names)
        for archive, pool, sha in debs:
            assert archive in pginstalls.MIRRORS and pool.startswith("pool/main/")
            assert pool.endswith("_amd64.deb") and re.fullmatch("[0-9a-f]{64}", sha)
