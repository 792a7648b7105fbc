"""bench/common.py's metric_values: one value per run. Window-tagged rows (burst,
sustained) beside the whole-run metric made bench/fidelity.py pair more volbench values
than plain fio runs ("zip() argument 2 is shorter")."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from support import make_db, make_run
from volbench.core.model import Metric, Parsed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from common import metric_values


def test_window_rows_are_not_counted_as_runs(tmp_path: Path) -> None:
    windows = Parsed(tuple(Metric("iops", 900.0, "IOPS", {"op": "read", "window": w})
                           for w in ("burst", "sustained")))
    runs = [make_run("disk", {"iops": 100.0 * i}, i, started=10.0 * i) for i in (1, 2, 3)]
    runs = [replace(r, parsed=Parsed(r.parsed.metrics + windows.metrics)) for r in runs]
    db = make_db(tmp_path / "r.db", runs)
    assert metric_values(db, "iops", op="read") == {"disk": [100.0, 200.0, 300.0]}
    assert metric_values(db, "iops", op="read", window="burst") == {"disk": [900.0] * 3}
