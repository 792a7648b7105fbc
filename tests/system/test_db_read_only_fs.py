"""Issue 34 (and the round before): an intact database on a read-only filesystem was
called "damaged … restore it from a copy". It is read as it is, and a command that would
write to it says the filesystem is read-only."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from volbench.cli.main import main

pytestmark = pytest.mark.root
FIO_JSON = Path(__file__).resolve().parents[1] / "data/fio/3.33/randread-4k-qd16.json"


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs holding a results database with one experiment, remounted read-only."""
    where = tmp_path / "ro"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=True)
    try:
        assert main(["import", "--tool", "fio", "--target", "t", "--db", str(where / "r.db"),
                     str(FIO_JSON)]) == 0
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_an_intact_database_on_a_read_only_filesystem_is_not_called_damaged(
        read_only: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(read_only / "r.db")
    capsys.readouterr()
    assert main(["report", "--list", "--db", db]) == 0
    assert "import:t" in capsys.readouterr().out
    assert main(["export", "--db", db]) == 0
    capsys.readouterr()
    for argv in (["import", "--tool", "fio", "--target", "t", "--db", db, str(FIO_JSON)],
                 ["push", "--to", str(read_only / "other.db"), db]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "is on a read-only filesystem" in err and "damaged" not in err, err
        assert err.count("\n") == 1
