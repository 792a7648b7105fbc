"""Issue 12 §1 on real fio and a real loop device: a fio workload cannot write outside
its target. Each attack is refused before fio starts, and the loop device the
experiment never named, or the other directory, is byte for byte what it was."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_guard import loop

from support import tool
from volbench.core.errors import ExperimentError
from volbench.engine import execution
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.system import proc
from volbench.targets.base import Built
from volbench.workloads import KINDS
from volbench.workloads.base import RunContext

pytestmark = [pytest.mark.root, pytest.mark.slow]


def digest(device: str) -> str:
    h = hashlib.sha256()
    with open(device, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture
def bystander(workdir: Path) -> Iterator[str]:
    """A loop device no experiment names (16 MiB of zeros)."""
    tool("fio")
    with loop(workdir, "16M", name="bystander") as device:
        yield device


def experiment(workdir: Path, target_dir: Path, **workload: Any) -> dict[str, Any]:
    return {
        "name": "escape",
        "workdir": str(workdir / "work"),
        "targets": [{"name": "d", "type": "directory", "path": str(target_dir)}],
        "workloads": [{"name": "w", "tool": "fio", **workload}],
        "repeat": 1,
    }


def test_options_naming_another_device_are_refused_before_the_run(
        workdir: Path, tmp_path: Path, bystander: str) -> None:
    target = workdir / "dt"
    target.mkdir()
    before = digest(bystander)
    doc = experiment(workdir, target, rw="write", bs="1M", size="8M", runtime="1s",
                     options={"filename": bystander})
    db = tmp_path / "r.db"
    with pytest.raises(ExperimentError) as err:
        run_experiment(parse_document(doc), db=db)
    text = str(err.value)
    assert f"workloads[0].options.filename: '{bystander}'" in text
    assert "make a `directory` target for it" in text
    assert digest(bystander) == before
    with Store(db) as store:
        assert store.experiments() == []  # refused before anything was stored
    assert list(target.iterdir()) == []
    # Control: the same write without volbench does change the device, so the checksum
    # above would have caught the attack (as it did before pathcheck).
    proc.run(["fio", "--name=control", f"--filename={bystander}", "--rw=write", "--bs=1M",
              "--size=1M", "--direct=1", "--buffer_pattern=0x5a", "--output=/dev/null"],
             timeout=60)
    assert digest(bystander) != before


def test_the_check_runs_again_on_the_built_target_before_fio_starts(
        workdir: Path, tmp_path: Path, bystander: str) -> None:
    """Even a run that skipped the plan-time check (a file changed since) never starts fio."""
    target = workdir / "private"
    target.mkdir()
    before = digest(bystander)
    exp = parse_document(experiment(workdir, target, rw="write", bs="1M", size="8M",
                                    runtime="1s", options={"filename": bystander}))
    spec = exp.workloads[0]
    (params,) = KINDS["fio"].cases(spec)
    ctx = RunContext(Built("d", "directory", path=target), tmp_path / "run")
    result = execution.measure(target="d", workload=spec, kind=KINDS["fio"], params=params,
                               repetition=1, warmup=False, ctx=ctx, tracker=None, drop=False)
    assert result.argv == () and "is outside the target's directory" in result.error
    assert digest(bystander) == before


@pytest.mark.parametrize("section", ["[dev]\ndirectory=/dev\nfilename={loop}\n",
                                     "[global]\ndirectory=/dev\n[dev]\nfilename={loop}\n"])
def test_a_job_section_s_directory_cannot_point_at_a_device(
        workdir: Path, tmp_path: Path, bystander: str, section: str) -> None:
    target = workdir / "dt"
    target.mkdir()
    before = digest(bystander)
    job = tmp_path / "attack.fio"
    job.write_text(section.format(loop=Path(bystander).name) + "rw=write\nsize=8M\n")
    doc = experiment(workdir, target, jobfile=str(job))
    with pytest.raises(ExperimentError) as err:
        run_experiment(parse_document(doc), db=tmp_path / "r.db")
    assert f"{job}:2 [" in str(err.value) and "directory: '/dev'" in str(err.value)
    assert digest(bystander) == before


def test_a_job_section_s_directory_cannot_point_at_another_directory(
        workdir: Path, tmp_path: Path) -> None:
    tool("fio")
    target, other = workdir / "dt", workdir / "other"
    target.mkdir()
    other.mkdir()
    job = tmp_path / "attack.fio"
    job.write_text(f"[elsewhere]\ndirectory={other}\nrw=write\nsize=8M\n")
    doc = experiment(workdir, target, jobfile=str(job))
    with pytest.raises(ExperimentError) as err:
        run_experiment(parse_document(doc), db=tmp_path / "r.db")
    assert f"{job}:2 [elsewhere] directory: '{other}': is outside the target" in str(err.value)
    assert list(other.iterdir()) == []


def test_a_confined_job_file_still_runs(workdir: Path, tmp_path: Path) -> None:
    """The rule refuses ways out, not job files: relative names and ${VOLBENCH_DIR} work."""
    tool("fio")
    target = workdir / "dt"
    target.mkdir()
    job = tmp_path / "ok.fio"
    job.write_text("[global]\nrw=write\nsize=4M\nbs=1M\n[a]\nfilename=a.dat\n"
                   "[b]\ndirectory=${VOLBENCH_DIR}\nfilename=b.dat\n")
    doc = experiment(workdir, target, jobfile=str(job))
    outcome = run_experiment(parse_document(doc), db=tmp_path / "r.db")
    assert outcome.counts == {"ok": 1}


@pytest.mark.parametrize("plant", ["symlink", "device node"])
def test_a_planted_data_file_never_reaches_the_layout_fio(
        workdir: Path, tmp_path: Path, bystander: str, plant: str) -> None:
    """Issue 25: a `command` workload plants a link (or a device node) at the fio data
    file's name; the untimed layout fio used to write 4 MiB through it before the
    measured run's check refused. Now the run fails before any fio, the device intact."""
    target = workdir / "dt"
    target.mkdir()
    before = digest(bystander)
    data = "$VOLBENCH_DIR/../volbench-fio-4M.dat"
    if plant == "symlink":
        argv = ["ln", "-sfn", bystander, data]
    else:
        rdev = os.stat(bystander).st_rdev
        argv = ["mknod", data, "b", str(os.major(rdev)), str(os.minor(rdev))]
    doc = experiment(workdir, target, rw="write", bs="1M", size="4M", runtime="1s")
    doc["workloads"].insert(0, {"name": "plant", "tool": "command",
                                "command": ["sh", "-c", " ".join(argv)]})
    db = tmp_path / "r.db"
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 1, "failed": 1}
    assert digest(bystander) == before
    with Store(db) as store:
        (failed,) = [r for r in store.runs([1]) if str(r.status) == "failed"]
    assert "volbench-fio-4M.dat" in failed.error
    assert ("leaves the target's directory" in failed.error if plant == "symlink"
            else "is a block device" in failed.error)
