"""pgbench's commit: the commit statement's latency from -r/--report-per-command on real
captures of pgbench 9.4 to 18, and the server settings that decide what a commit waits for,
shown where targets (or two result sets) differ in them (report/commitsettings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import DATA, load, make_db
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.report import answer, commitsettings
from volbench.report.compare import compare_reports
from volbench.workloads import pgbench_parse

PGBENCH = DATA / "pgbench"
PER_STATEMENT = sorted([*PGBENCH.glob("*/run-r-per-statement.stdout"),
                        PGBENCH / "9.4/pkb-run-c16-T5-r-P1.stdout"])


def commits(path: Path) -> list[Metric]:
    report = pgbench_parse.parse_report(path.read_text())
    return [m for m in report.metrics if m.name == "commit_latency"]


def statement(path: Path, text: str, **tags: str) -> float:
    report = pgbench_parse.parse_report(path.read_text())
    (value,) = [m.value for m in report.metrics if m.name == "statement_latency"
                and m.tags["statement"] == text
                and all(m.tags.get(k) == v for k, v in tags.items())]
    assert value is not None
    return value


@pytest.mark.parametrize("path", PER_STATEMENT, ids=lambda p: p.parent.name)
def test_the_end_of_every_version_is_the_commit(path: Path) -> None:
    (commit,) = commits(path)
    assert commit.unit == "s" and dict(commit.tags) == {}
    assert commit.value == statement(path, "END;")


def test_a_script_ending_with_commit_and_the_long_option() -> None:
    path = PGBENCH / "15.18/run-report-per-command-commit.stdout"
    assert "--report-per-command" in path.with_suffix(".cmd").read_text()
    (commit,) = commits(path)
    assert commit.value == statement(path, "COMMIT;") and commit.value > 1e-3


def test_each_script_has_its_own_commit() -> None:
    path = PGBENCH / "15.18/run-r-two-scripts.stdout"
    found = {m.tags["script"]: m.value for m in commits(path)}
    assert found == {"tpcb-like": statement(path, "END;", script="tpcb-like"),
                     "simple-update": statement(path, "END;", script="simple-update")}


def test_synchronous_commit_off_commits_without_waiting_for_the_wal() -> None:
    off = PGBENCH / "15.18/run-r-synchronous-commit-off.stdout"
    on = PGBENCH / "15.18/run-r-two-scripts.stdout"  # the same server, commits that wait
    assert "synchronous_commit=off" in off.with_suffix(".cmd").read_text()
    (fast,) = commits(off)
    waited = [m.value or 0 for m in commits(on)]
    assert fast.value is not None and fast.value < min(waited) / 3


def test_several_commits_in_one_script_keep_their_row() -> None:
    text = ("statement latencies in milliseconds:\n         0.100  BEGIN;\n"
            "         1.500  COMMIT;\n         0.100  BEGIN;\n         2.500  end\n")
    found = [(m.value, dict(m.tags)) for m in pgbench_parse.parse_report(text).metrics
             if m.name == "commit_latency"]
    assert found == [(pytest.approx(1.5e-3), {"n": "2"}), (pytest.approx(2.5e-3), {"n": "4"})]


def _run(target: str, rep: int, sync_commit: str, experiment_start: float = 0.0) -> RunResult:
    settings = {"synchronous_commit": sync_commit, "fsync": "on", "wal_sync_method": "fdatasync",
                "full_page_writes": "on", "shared_buffers": "128MB"}
    return RunResult(target, "tpcb", {"scale": 10, "clients": 4}, rep, Status.OK,
                     experiment_start + rep, experiment_start + rep + 1,
                     parsed=Parsed((Metric("tps", 500.0 + rep, "tx/s"),
                                    Metric("commit_latency", 2e-3, "s"))),
                     annotations={"service": {"settings": settings}})


def test_targets_that_commit_differently_are_named_in_the_answer(tmp_path: Path) -> None:
    runs = [_run(t, rep, "off" if t == "nfs" else "on") for t in ("xfs", "lvm", "nfs")
            for rep in (1, 2, 3)]
    built = load(make_db(tmp_path / "p.db", runs))
    (warning,) = [w for w in built.warnings if w.kind == commitsettings.KIND]
    assert warning.message == (
        "tpcb: what a commit waits for differs between targets: synchronous_commit off (nfs) "
        "/ on (xfs, lvm); their tps and commit latency compare these settings too")
    assert f"- {warning.message}"[:90] in "\n".join(answer.note_lines(built, width=400))
    same = load(make_db(tmp_path / "s.db", [_run(t, 1, "on") for t in ("xfs", "nfs")]))
    assert not [w for w in same.warnings if w.kind == commitsettings.KIND]


def test_compare_names_a_setting_that_changed_between_the_sets(tmp_path: Path) -> None:
    a = load(make_db(tmp_path / "a.db", [_run("xfs", rep, "on") for rep in (1, 2, 3)]))
    b = load(make_db(tmp_path / "b.db", [_run("xfs", rep, "off") for rep in (1, 2, 3)]))
    found = [w for w in compare_reports(a, b).warnings if "commit waits for" in w]
    assert found == ["what a commit waits for differs (A → B) for tpcb on xfs: "
                     "synchronous_commit on → off: the comparison includes these settings"]
