"""A device target whose device went (a pulled disk) is refused before fio starts: fio
given a missing node's path would create a regular file there (issue 23, lab pull)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.core.errors import ExperimentError
from volbench.targets.base import Built
from volbench.workloads import fio, fiochecks


def test_a_missing_or_plain_file_device_is_named_and_a_block_device_passes(
        tmp_path: Path) -> None:
    gone = Built("d1", "disk", None, str(tmp_path / "vdc"))
    problem = fiochecks.device_gone_problem(gone)
    assert problem is not None and "is gone" in problem.message and "d1" in problem.path
    (tmp_path / "vdc").write_bytes(b"")  # what fio would have made of it
    problem = fiochecks.device_gone_problem(gone)
    assert problem is not None and "no longer a block device" in problem.message
    assert fiochecks.device_gone_problem(Built("f", "directory", tmp_path)) is None
    block = next((p for p in ("/dev/loop0", "/dev/vda") if Path(p).is_block_device()), None)
    if block is not None:  # stat only: nothing is opened
        assert fiochecks.device_gone_problem(Built("b", "disk", None, block)) is None


def test_fio_refuses_the_run_with_the_problem(tmp_path: Path) -> None:
    spec = fio.FioSpec("reads", "fio")
    with pytest.raises(ExperimentError, match="is gone"):
        fiochecks.confine(spec, {"size": "1M"}, Built("d1", "disk", None, str(tmp_path / "x")))
