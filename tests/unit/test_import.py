"""`volbench import` (engine/importer.py): imports get a live run's analysis and never
mislead (issue 22; the pgbench cases are in test_pgbench_parse.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


BONNIE = DATA / "bonnie++"


def _value(metrics: object, name: str, test: str, row: str) -> object:
    found = [m for m in metrics if m.name == name and m.tags["test"] == test  # type: ignore[attr-defined]
             and m.tags["row"] == row]
    assert len(found) == 1, (name, test, row, found)
    return found[0].value


def test_bonnie_csv_mixing_versions_reads_every_row_by_its_own_layout(tmp_path: Path) -> None:
    # Real rows: 1.96 (48 fields), three of 1.03c (27 fields, no version, no latencies),
    # 2.00a (format 1.98, 50 fields), appended to one file as users keep them.
    path = BONNIE / "1.03c/mixed-1.96-1.03c-2.00a.csv"
    with Store(tmp_path / "b.db") as store:
        exp_id, n = import_files(store, "bonnie++", "mixed", [path])
        (run,) = store.runs([exp_id])
    assert n == 1 and str(run.status) == "ok"
    m = run.metrics
    assert {x.tags["row"] for x in m} == {"1", "2", "3", "4", "5"}
    assert _value(m, "bw", "put_block", "1") == 72853 * 1024.0  # 1.96
    assert _value(m, "latency_max", "put_block", "1") == 0.512
    assert _value(m, "bw", "put_block", "2") == 29208 * 1024.0  # 1.03c, IDE
    assert _value(m, "ops", "seeks", "3") == 3123.7  # 1.03c, virtio
    assert _value(m, "bw", "get_block", "4") == 91063 * 1024.0  # 1.03c, host
    assert not [x for x in m if x.name == "latency_max" and x.tags["row"] in ("2", "3", "4")]
    assert _value(m, "ops", "seq_create", "2") is None  # +++++: too fast to measure
    assert _value(m, "bw", "putc", "5") == 2709 * 1024.0  # 2.00a, after seek_count fields


def test_bonnie_103_rows_alone_and_their_parameters() -> None:
    from volbench.engine.importer import IMPORTERS

    text = (BONNIE / "1.03c/forum-kvm-ide-virtio-host.csv").read_text()
    imp = IMPORTERS["bonnie++"](text, "forum")
    assert imp.params == {"size": "500M", "per_char": True, "files": 16}
    assert len({x.tags["row"] for x in imp.parsed.metrics}) == 3


def test_dd_progress_imports_as_its_per_second_series(tmp_path: Path) -> None:
    # A real 31 s dd with status=progress: ~6.6 MB/s each second, flat, so no window.
    path = DATA / "dd/coreutils-9.1/status-progress.stderr"
    with Store(tmp_path / "d.db") as store:
        exp_id, _ = import_files(store, "dd", "loop", [path])
        (run,) = store.runs([exp_id], series=True)
    (bw,) = [s for s in run.parsed.series if s.name == "bw"]
    assert len(bw.points) == 31 and bw.points[0] == (1.0, 6819840.0)
    assert not [m for m in run.metrics if "window" in m.tags]


def test_the_import_command_says_which_runs_failed(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from volbench.cli.main import main

    pg = DATA / "pgbench"
    files = [pg / "15/run-c4-j2-T3-P1.stdout", pg / "15.18/error-init-missing-tablespace.stderr"]
    assert main(["import", "--tool", "pgbench", "--target", "pg", "--db",
                 str(tmp_path / "i.db"), *map(str, files)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("imported 2 run(s) of pgbench as target pg")
    assert out[1] == ('run 2 is a failed run: pgbench -i failed: ERROR:  tablespace "missing" '
                      "does not exist")
