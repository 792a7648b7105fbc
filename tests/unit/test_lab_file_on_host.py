"""A file whose targets stand on its own lab disks, given to a plain `volbench run` on the
host (the issue 30 example, examples/commit-latency.yaml): refused before anything is
built or stored, with the command that runs it (engine/preflight.py lab_problems)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import ROOT
from volbench.cli.main import main
from volbench.engine import experiment
from volbench.engine.plan import make_plan
from volbench.engine.preflight import lab_problems, preflight
from volbench.store.db import Store

EXAMPLE = ROOT / "examples" / "commit-latency.yaml"


def test_a_lab_file_run_on_the_host_is_refused_with_the_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOLBENCH_LAB", raising=False)
    exp = experiment.load(EXAMPLE)
    (problem,) = lab_problems(exp)
    text = str(problem)
    assert text.startswith("lab: the targets use this file's lab disks (")
    assert "and 27 more" in text  # one, lv1 … lv25, md1, md2, nfs, lun: 30 disks
    assert "volbench lab run FILE" in text
    with pytest.raises(Exception, match="volbench lab run FILE"):
        preflight(exp, make_plan(exp))


def test_in_the_lab_and_without_lab_disks_nothing_is_said(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    exp = experiment.load(EXAMPLE)
    monkeypatch.setenv("VOLBENCH_LAB", "1")  # what the guest's script exports
    assert lab_problems(exp) == []
    monkeypatch.delenv("VOLBENCH_LAB")
    host = experiment.parse_document({
        "name": "h", "workdir": str(tmp_path), "lab": {"disks": [{"name": "d1", "size": "1G"}]},
        "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
        "workloads": [{"name": "w", "tool": "dd", "op": "write", "count": 8}]})
    assert lab_problems(host) == []  # a lab: section alone is no reason to refuse


def test_volbench_run_of_the_example_stores_no_experiment(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    monkeypatch.delenv("VOLBENCH_LAB", raising=False)
    db = tmp_path / "c.db"
    assert main(["run", str(EXAMPLE), "--db", str(db)]) != 0
    err = capsys.readouterr().err
    assert "volbench lab run FILE" in err and "could not be built" not in err
    if db.exists():
        with Store(db) as store:
            assert store.experiments() == []
