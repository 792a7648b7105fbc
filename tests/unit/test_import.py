"""`volbench import` (engine/importer.py): imports get a live run's analysis and never
mislead (issue 22; the pgbench cases are in test_pgbench_parse.py)."""

from __future__ import annotations

from pathlib import Path

from support import DATA
from volbench.engine.importer import import_files
from volbench.store.db import Store


def test_an_imported_fio_run_gets_the_live_runs_window_analysis(tmp_path: Path) -> None:
    # A real lab burst (2500 -> 500 IOPS after ~20 s) with its per-second logs beside it.
    fio_dir = DATA / "fio" / "3.33"
    for path in fio_dir.glob("lab-burst-fresh.*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "other.fio_iops.1.log").write_text("1000, 1, 0, 0, 0\n")  # not this run's
    with Store(tmp_path / "b.db") as store:
        exp_id, _ = import_files(store, "fio", "lab", [tmp_path / "lab-burst-fresh.json"])
        (run,) = store.runs([exp_id], series=True)
    names = {m.name for m in run.metrics}
    windows = {m.tags.get("window") for m in run.metrics if m.name == "iops"}
    assert "burst_seconds" in names and {"burst", "sustained"} <= windows
    iops = next(s for s in run.parsed.series if s.name == "iops")
    assert len(iops.points) == 59 and iops.points[0][1] == 2705  # other.* was not added
