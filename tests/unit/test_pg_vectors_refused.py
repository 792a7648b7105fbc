"""Issue 34's pgbench and PostgreSQL vectors that the experiment file's checks refuse
(bench/pgvectors.py: scripts, options, settings), each refused when the file is read
with a line naming the field and the reason. These are the friendly errors; the wall
behind them is tested on a real server and sandbox (tests/system/test_pg_vectors.py,
tests/system/test_pg_sandbox.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from support import ROOT
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document

sys.path.insert(0, str(ROOT / "bench"))
from pgvectors import VECTORS, Vector, said

REFUSED = [v for v in VECTORS if v.expect == "refused"]


def workload(vector: Vector, tmp_path: Path) -> dict[str, Any]:
    fields: dict[str, Any] = {"name": "pg", "tool": "pgbench", "duration": "1s"}
    script = tmp_path / f"{vector.name}.sql"
    if vector.script:
        script.write_text(vector.script.format(S=tmp_path / "root-only", O=tmp_path))
    for key, value in vector.workload.items():
        if key == "options" or key == "init_options":
            value = [v.format(F=script) for v in value]
        elif key == "settings":
            value = {k: v.format(O=tmp_path) if isinstance(v, str) else v
                     for k, v in value.items()}
        fields[key] = value
    if vector.script and "options" not in vector.workload:
        fields["script"] = str(script)
    return fields


def test_the_catalogue_has_the_issue_s_forty_and_more() -> None:
    assert len(VECTORS) >= 60
    assert len({v.name for v in VECTORS}) == len(VECTORS)
    assert {v.kind for v in VECTORS} == {"script", "options", "settings", "sql", "sandbox"}


@pytest.mark.parametrize("vector", REFUSED, ids=[v.name for v in REFUSED])
def test_each_vector_is_refused_when_the_file_is_read(vector: Vector, tmp_path: Path) -> None:
    doc = {"name": "v", "workdir": str(tmp_path / "w"),
           "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
           "workloads": [workload(vector, tmp_path)]}
    with pytest.raises(ExperimentError) as err:
        parse_document(doc)
    text = str(err.value)
    assert "workloads[0]." in text, text
    assert said(vector, text), f"{vector.how}: {text}"
