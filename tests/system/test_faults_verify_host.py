"""The verify pass after a faulted run, for real: fio random writes on a throttled loop
disk slowed for 2 s, the data file laid out with checksums before and read back after.
Nothing is lost, so the pass says so; with two blocks damaged between the run's writes
and the read-back (standing in for a fault that loses data) it counts exactly those."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from support import leftovers, tool
from volbench.engine.experiment import parse_document
from volbench.engine.faultverify import VerifyPass
from volbench.engine.runner import run_experiment
from volbench.report.phaseview import verify_words
from volbench.store.db import Store

pytestmark = pytest.mark.root
DAMAGED = (3 * 1024 * 1024 + 8192, 7 * 1024 * 1024)  # two 4 KiB blocks of the 16M file


def faulted_run(workdir: Path, db: Path) -> Any:
    tool("fio")
    doc = {"name": "verify", "workdir": str(workdir),
           "targets": [{"name": "std", "type": "loopdisk", "size": "128M", "fs": "ext4",
                        "limits": {"read_iops": 2000, "write_iops": 2000}}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randwrite", "bs": "4k",
                          "iodepth": 8, "size": "16M", "runtime": "6s",
                          "faults": [{"at": "2s", "action": "slow", "target": "std",
                                      "for": "2s", "percent": 20}]}],
           "repeat": 1}
    outcome = run_experiment(parse_document(doc), db=db)
    assert outcome.counts == {"ok": 1}, outcome
    with Store(db) as store:
        (run,) = store.runs([outcome.experiment_id])
    return run


def metric(run: Any, name: str) -> Any:
    return next(m for m in run.metrics if m.name == name and "phase" not in m.tags)


def test_nothing_lost_after_a_slowed_disk(workdir: Path, tmp_path: Path) -> None:
    run = faulted_run(workdir, tmp_path / "v.db")
    verify = run.annotations["faults"]["verify"]
    assert verify["nothing_lost"] is True, verify
    assert verify["expected"] == "nothing lost"
    assert metric(run, "verify_errors").value == 0.0
    assert metric(run, "verify_checked_bytes").value == 16 * 1024 * 1024
    # The measured writes carried checksums: a block they overwrote still verifies.
    assert "--verify=crc32c" in run.argv and "--do_verify=0" in run.argv
    assert verify_words(verify).startswith("nothing lost (16M checked)")
    assert not leftovers(workdir)


def test_blocks_damaged_before_the_read_back_are_counted(
        workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check = VerifyPass.check

    def damage_then_check(self: VerifyPass, *args: Any) -> Any:
        with open(self.filename, "r+b") as f:
            for offset in DAMAGED:
                f.seek(offset + 100)
                f.write(b"\xff" * 64)
            f.flush()
            os.fsync(f.fileno())
        return check(self, *args)

    monkeypatch.setattr(VerifyPass, "check", damage_then_check)
    run = faulted_run(workdir, tmp_path / "d.db")
    verify = run.annotations["faults"]["verify"]
    assert verify["nothing_lost"] is False
    assert [tuple(b) for b in verify["bad_blocks"]] == [(o, 4096) for o in DAMAGED]
    assert metric(run, "verify_errors").value == 2.0
    assert "NOT expected" in verify_words(verify)
    assert not leftovers(workdir)
