"""Issue 12 §5 on real small filesystems: a workload that does not fit is named as such,
its partial files go (so later runs on the target succeed), a full work directory is told
apart from a full target, and failed runs can be run again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_guard import loop, mounted

from support import tool
from volbench.core.model import Status
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.system import proc
from volbench.system.block import space

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_enospc_is_recognised_in_tools_words() -> None:
    assert space.mentions_enospc("fio: io_u error on file f: No space left on device: write")
    assert space.mentions_enospc('{"jobs": [{"error" : 28}]}')
    assert space.mentions_enospc("fio: pid=0, err=28/file:filesetup.c:240, func=write")
    assert not space.mentions_enospc("exit code 1: fio: failed parsing rw=x", "")


def test_a_raw_device_too_small_is_named(tmp_path: Path) -> None:
    why = space.explain(["dd: error writing '/dev/loop3': No space left on device"],
                        directory=None, device="/dev/loop3", rundir=tmp_path,
                        needed=2**30, before=None)
    assert why == ("no space left on the raw device /dev/loop3: the workload needs 1G, more "
                   "than the device holds; give the target a larger disk or the workload a "
                   "smaller size")
    assert space.explain(["exit code 1: bad option"], directory=None, device="/dev/loop3",
                         rundir=tmp_path, needed=None, before=None) is None


def fio(name: str, size: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "tool": "fio", "rw": "randread", "bs": "64k", "size": size,
            "runtime": "1s", **more}


def runs_of(db: Path) -> list[Any]:
    with Store(db) as store:
        return store.runs([e.id for e in store.experiments()])


def test_a_workload_that_does_not_fit_a_small_loopdisk(workdir: Path, tmp_path: Path) -> None:
    tool("fio")
    doc = {"name": "full", "workdir": str(workdir),
           "targets": [{"name": "small", "type": "loopdisk", "size": "100M", "fs": "ext4"}],
           # In this order: the big case first, so its partial file would stay in the way.
           "workloads": [fio("big", "128M"), fio("fits", "48M")], "repeat": 1}
    db = tmp_path / "r.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"failed": 1, "ok": 1}
    big, fits = sorted(runs_of(db), key=lambda r: r.workload)
    assert big.status is Status.FAILED and fits.status is Status.OK
    assert big.error.startswith("setup failed: no space left on the target (ext4 /dev/loop")
    assert "the workload needs 128M" in big.error and " free; " in big.error
    assert "its partial files were removed (volbench-fio-128M.dat)" in big.error


@pytest.fixture
def small_fs(workdir: Path) -> Iterator[Path]:
    """A 64 MiB ext4 of the test's own, mounted."""
    tool("mkfs.ext4")
    with loop(workdir, "64M", name="small") as device:
        proc.run(["mkfs.ext4", "-q", device], timeout=60)
        with mounted(device, workdir / "mnt") as mnt:
            yield mnt
    # udev may still hold the device after the unmount, making the detach a deferred one.
    deadline = time.monotonic() + 30
    while still_attached(device, "small.img") and time.monotonic() < deadline:
        time.sleep(0.1)


def still_attached(device: str, image: str) -> bool:
    try:
        return image in Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text()
    except OSError:
        return False


def test_failed_runs_are_run_again_with_retry_failed(workdir: Path, tmp_path: Path,
                                                     small_fs: Path) -> None:
    tool("fio")
    ballast = small_fs / "ballast"
    proc.run(["fallocate", "-l", "40M", str(ballast)], timeout=60)
    doc = {"name": "retry", "workdir": str(workdir / "work"),
           "targets": [{"name": "d", "type": "directory", "path": str(small_fs)}],
           "workloads": [fio("w", "32M")], "repeat": 2}
    exp = parse_document(doc)
    db = tmp_path / "r.db"
    first = run_experiment(exp, db=db)
    assert first.counts == {"failed": 2}
    assert all("no space left on the target (ext4" in r.error for r in runs_of(db))
    assert sorted(p.name for p in small_fs.iterdir()) == ["ballast", "lost+found"]
    ballast.unlink()  # the user makes room
    # --resume alone continues: failed runs count as done.
    assert run_experiment(exp, db=db, resume=True).skipped == 2
    again = run_experiment(exp, db=db, resume=True, retry_failed=True)
    assert again.counts == {"ok": 2} and again.experiment_id == first.experiment_id
    ok = [r.repetition for r in runs_of(db) if r.status is Status.OK]
    assert sorted(ok) == [1, 2]


@pytest.fixture
def tiny_tmpfs(workdir: Path) -> Iterator[Path]:
    where = workdir / "tmpfs"
    where.mkdir()
    proc.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], timeout=30)
    try:
        yield where
    finally:
        proc.run(["umount", str(where)], timeout=30)


def test_no_room_for_the_run_s_own_output_is_named(workdir: Path, tmp_path: Path,
                                                   tiny_tmpfs: Path) -> None:
    tool("fio")
    target = workdir / "dt"
    target.mkdir()
    doc = {"name": "out", "workdir": str(tiny_tmpfs),
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [fio("w", "8M", direct=False)], "repeat": 1}
    exp = parse_document(doc)
    exp.workdir.mkdir(exist_ok=True)
    # Full, but with the run directories made: mkdir on a full tmpfs still works.
    proc.run(["dd", "if=/dev/zero", f"of={tiny_tmpfs}/ballast", "bs=64k"], timeout=60,
             check=False)
    db = tmp_path / "r.db"
    outcome = run_experiment(exp, db=db)
    assert outcome.counts == {"failed": 1}
    (run,) = runs_of(db)
    assert run.error.startswith("no space left for the run's own output in "
                                f"{tiny_tmpfs}/"), run.error
    assert "cannot read fio output" not in run.error.split("[")[0]


def fill(directory: Path) -> None:
    """Up to the last block: ext4 stops a big write with some space left (delayed
    allocation keeps a margin), so smaller writes take the rest."""
    for i, bs in enumerate(("64k", "4k", "1k", "1k")):
        proc.run(["dd", "if=/dev/zero", f"of={directory}/ballast{i or ''}", f"bs={bs}"],
                 timeout=120, check=False)
    proc.run(["sync", "-f", str(directory)], timeout=60, check=False)


def test_a_full_results_database_is_named(workdir: Path, tmp_path: Path,
                                          tiny_tmpfs: Path) -> None:
    from volbench.core.errors import StoreError

    target = workdir / "dt"
    target.mkdir()
    db = tiny_tmpfs / "r.db"
    doc = {"name": "db", "workdir": str(workdir / "work"),
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [fio("w", "8M", direct=False)], "repeat": 1}
    expected = (f"no space left for the results database r.db in {tiny_tmpfs} (tmpfs tmpfs "
                f"on {tiny_tmpfs}, 4M, 0 free); free space there or give --db a path on a "
                "larger filesystem")
    with Store(db):  # held open: its WAL index stays, so the full disk shows on a write
        fill(tiny_tmpfs)
        with pytest.raises(StoreError) as err:
            run_experiment(parse_document(doc), db=db)
        assert str(err.value).startswith(expected), str(err.value)
    # Opening it anew needs room for the WAL index: SQLite says "disk I/O error" then.
    with pytest.raises(StoreError) as err:
        run_experiment(parse_document(doc), db=db)
    assert str(err.value).startswith(expected), str(err.value)


def test_a_full_work_directory_is_named_before_any_run(workdir: Path, tmp_path: Path,
                                                       small_fs: Path) -> None:
    from volbench.core.errors import ResourceError

    target = workdir / "dt"
    target.mkdir()
    fill(small_fs)
    doc = {"name": "wd", "workdir": str(small_fs),
           "targets": [{"name": "d", "type": "directory", "path": str(target)}],
           "workloads": [fio("w", "8M", direct=False)], "repeat": 1}
    with pytest.raises(ResourceError) as err:
        run_experiment(parse_document(doc), db=tmp_path / "r.db")
    assert str(err.value).startswith(f"no space left for the run's own output in {small_fs}")
    assert not [p for p in small_fs.iterdir() if p.name.startswith("wd-")]
