"""Issue 24: a history matched by the experiment file's `series:` key (experiment, target,
workload) instead of by name: validated, stored, and followed by `volbench history`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from support import make_run
from volbench.cli.main import main
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_text
from volbench.store import history as storehistory
from volbench.store import sync
from volbench.store.db import Store

FILE = ("name: e\nseries: tier1\n"
        "targets: [{name: d, type: directory, path: /var/tmp, series: disk}]\n"
        "workloads: [{name: w, tool: fio, runtime: 1s, series: rand}]\n")


def test_series_keys_are_read_at_every_level() -> None:
    exp = parse_text(FILE)
    assert exp.series == "tier1"
    assert exp.document["targets"][0]["series"] == "disk"
    assert storehistory.case_labels(exp.document) == {("target", "d"): "disk",
                                                      ("workload", "w"): "rand"}
    assert parse_text(FILE.replace("series: tier1\n", "")).series == ""


@pytest.mark.parametrize(("old", "new", "field"), [
    ("series: tier1", "series: 'a b'", "series"),
    ("series: disk", "series: ../x", "targets[0].series"),
    ("series: rand", "series: ''", "workloads[0].series"),
    ("series: rand", "series: [a, b]", "workloads[0].series"),
])
def test_a_bad_series_key_names_its_field(old: str, new: str, field: str) -> None:
    with pytest.raises(ExperimentError) as info:
        parse_text(FILE.replace(old, new), "exp.yaml")
    (problem,) = info.value.problems
    assert problem.path == field


def fill(path: Path) -> None:
    """Three experiments: two of series tier1 under different names (the target renamed,
    matched by its series key), one named like the first without a key."""
    with Store(path) as store:
        for i, (name, series, target) in enumerate([
                ("nightly-2025", "tier1", "old"), ("plain", "", "old"),
                ("nightly-2026", "tier1", "new")]):
            doc = {"name": name, "targets": [{"name": target, "series": "disk"}]} \
                if series else {"name": name}
            exp = store.begin_experiment(name, f"h{i}", doc, {"hostname": "h1"}, 1,
                                         series=series)
            store.db.execute("UPDATE experiments SET created = ? WHERE id = ?",
                             (1.7e9 + 86400 * i, exp))
            for rep in range(3):
                store.save_run(exp, make_run(target, {"iops": 100.0 * (i + 1) + rep}, rep,
                                             started=float(rep)))
            store.set_status(exp, "done")


def test_history_follows_the_series_key_across_names(tmp_path: Path) -> None:
    fill(tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        (line,) = storehistory.build(store, storehistory.Filters(series="tier1"))
        (latest,) = storehistory.build(store, storehistory.Filters())
        by_name = storehistory.build(store, storehistory.Filters("nightly-2025"))
    assert line.case.startswith("disk / w / ")
    assert [p.median for p in line.points] == [101.0, 301.0]
    assert latest == line  # the latest experiment has a key: it is followed
    assert [len(x.points) for x in by_name] == [1] and by_name[0].case.startswith("disk")


PARAMS = '{"bs":"4k","rw":"randread"}'  # make_run's


def test_history_series_on_the_command_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "r.db")
    assert main(["history", "--db", str(tmp_path / "r.db"), "--series", "tier1"]) == 0
    assert f"disk / w / {PARAMS}: iops (op/s, op=read), 2 experiment(s)" in capsys.readouterr().out
    assert main(["history", "--db", str(tmp_path / "r.db"), "--experiment", "plain"]) == 0
    assert f"old / w / {PARAMS}: iops (op/s, op=read), 1 experiment(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["history", "--db", str(tmp_path / "r.db"), "--series", "a", "--experiment", "b"])
    assert "not allowed with" in capsys.readouterr().err


def test_the_key_is_stored_and_copied_by_push(tmp_path: Path) -> None:
    fill(tmp_path / "r.db")
    with Store(tmp_path / "r.db", read_only=True) as src, Store(tmp_path / "c.db") as dst:
        sync.copy(src, dst)
    with sqlite3.connect(tmp_path / "c.db") as db:
        rows = db.execute("SELECT name, series FROM experiments ORDER BY id").fetchall()
    assert rows == [("nightly-2025", "tier1"), ("plain", ""), ("nightly-2026", "tier1")]
