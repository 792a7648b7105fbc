"""Which fio runs skip drop_caches (issue 25's harness overhead): only volbench's own job
with direct I/O through an engine that honours it, and no option that could turn it off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from volbench.engine import execution
from volbench.engine.experiment import parse_document
from volbench.targets.base import Built
from volbench.workloads import KINDS
from volbench.workloads.base import Invocation, RunContext


def invocation_uncached(tmp_path: Path, **workload: Any) -> bool:
    exp = parse_document({"name": "u", "workdir": str(tmp_path / "w"),
                          "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
                          "workloads": [{"name": "f", "tool": "fio", "size": "1M",
                                         **workload}]})
    spec = exp.workloads[0]
    (params,) = KINDS["fio"].cases(spec)
    ctx = RunContext(Built("d", "directory", path=tmp_path), tmp_path / "run")
    return KINDS["fio"].command(spec, params, ctx).uncached


def test_direct_io_with_libaio_needs_no_cache_drop(tmp_path: Path) -> None:
    assert invocation_uncached(tmp_path) is True


@pytest.mark.parametrize("workload", [{"direct": False}, {"ioengine": "mmap"},
                                      {"options": {"direct": "0"}},
                                      {"options": {"buffered": "1"}}])
def test_anything_that_may_use_the_cache_still_drops_it(tmp_path: Path,
                                                        workload: dict[str, Any]) -> None:
    assert invocation_uncached(tmp_path, **workload) is False


def test_a_run_that_needs_no_drop_is_not_reported_as_warm() -> None:
    """The report warns of warm caches for runs annotated `caches`; a direct-I/O run
    whose drop was skipped on purpose must not carry that annotation."""
    notes = execution.settle_caches(Invocation(("fio",), 1.0, uncached=True))
    assert "caches" not in notes and "direct I/O" in notes["caches_kept"]
