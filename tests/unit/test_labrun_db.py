"""Two lab runs on one results database: the second is refused, nothing is overwritten."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from volbench.lab import labrun
from volbench.lab.vm import LabResult

EXPERIMENT = """\
name: twice
lab: {disks: [{name: d1, size: 1G}]}
targets: [{name: plain, type: disk, device: /dev/disk/by-id/virtio-d1, fs: none}]
workloads: [{name: r, tool: fio, rw: randread, runtime: 1s}]
"""

HOLD = """
import sys, time
from pathlib import Path
from volbench.lab import labrun
with labrun._one_lab_run(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    db = tmp_path / "results.db"
    db.write_bytes(b"the host's results")
    return tmp_path / "exp.yaml", db


def test_a_second_lab_run_on_the_same_database_is_refused_before_booting(
        files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    exp, db = files
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"

        def no_boot(*args: Any, **kwargs: Any) -> LabResult:
            raise AssertionError("a refused lab run must not boot the VM")

        monkeypatch.setattr(labrun, "run_in_vm", no_boot)
        with pytest.raises(labrun.DatabaseBusy, match=f"PID {holder.pid}.*own --db"):
            labrun.run_experiment_in_lab(exp, db=db, workdir=exp.parent / "work")
    finally:
        holder.kill()
        holder.wait()
    assert db.read_bytes() == b"the host's results"


def _vm_that_stores(db_written_meanwhile: Path | None) -> Any:
    """Stands in for the VM (not what is under test here): the guest's volbench stores
    its results in the shared outdir; meanwhile, optionally, the host's database changes."""
    def run_in_vm(lab: Any, argv: list[str], outdir: Path, **kwargs: Any) -> LabResult:
        (outdir / "results.db").write_bytes(b"host results + lab results")
        if db_written_meanwhile is not None:
            time.sleep(0.01)
            db_written_meanwhile.write_bytes(b"the host's results + a host run's")
        return LabResult(0, "", outdir, 1.0, 2.0)
    return run_in_vm


def test_the_lab_copy_replaces_an_unchanged_database(
        files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    exp, db = files
    monkeypatch.setattr(labrun, "run_in_vm", _vm_that_stores(None))
    outcome = labrun.run_experiment_in_lab(exp, db=db, workdir=exp.parent / "work")
    assert outcome.db == db and not outcome.kept_aside
    assert db.read_bytes() == b"host results + lab results"


def test_a_database_changed_during_the_lab_run_is_not_overwritten(
        files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    exp, db = files
    monkeypatch.setattr(labrun, "run_in_vm", _vm_that_stores(db))
    outcome = labrun.run_experiment_in_lab(exp, db=db, workdir=exp.parent / "work")
    assert outcome.kept_aside and outcome.db is not None and outcome.db != db
    assert outcome.db.parent == db.parent and outcome.db.name.startswith("results-lab-")
    assert db.read_bytes() == b"the host's results + a host run's"
    assert outcome.db.read_bytes() == b"host results + lab results"
