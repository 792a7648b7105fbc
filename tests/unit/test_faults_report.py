"""A faulted run's phases on its time-series chart: shaded and labelled with their level."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support import load, make_db, make_run
from volbench.core.model import Metric, Parsed, Series
from volbench.report import answer, phaseview
from volbench.report.charts import all_charts
from volbench.report.markdown import MarkdownExporter
from volbench.report.options import ReportOptions
from volbench.report.timeline import level_text


def report_markdown(report: object) -> str:
    return MarkdownExporter().render(report, ReportOptions())  # type: ignore[arg-type]


def test_fault_phases_are_shaded_with_their_levels() -> None:
    series = Series("iops", "op/s", tuple((float(t), 500.0) for t in range(1, 31)),
                    {"op": "read"})
    events = [{"done_s": 8.8, "phase": "fail", "error": None},
              {"done_s": 18.8, "phase": "restore", "error": None},
              {"done_s": 29.9, "phase": "teardown", "error": None}]
    run = make_run("r1", {"iops": 700.0}, 1, started=0.0,
                   annotations={"faults": {"events": events, "tool_offset_s": 0.8}},
                   parsed_extra=Parsed(series=(series,)))
    run = replace(run, parsed=Parsed(
        (*run.metrics, Metric("iops", 512.0, "op/s", {"op": "read", "phase": "fail"})),
        (series,)))
    got = phaseview.windows(run, series, level_text)
    assert [(s, e) for s, e, _ in got] == [(8.0, 18.0), (18.0, 30.0)]
    assert got[0][2] == "fail: " + level_text(512.0, "op/s")
    assert got[1][2] == "restore"


def test_a_run_without_faults_has_no_phase_windows() -> None:
    series = Series("iops", "op/s", ((1.0, 5.0),), {"op": "read"})
    run = make_run("r1", {"iops": 5.0}, 1, started=0.0)
    assert phaseview.windows(run, series, level_text) == ()


def test_the_phase_table_compares_each_phase_with_before(tmp_path: Path) -> None:
    events = [{"done_s": 8.8, "phase": "fail", "action": "fail", "error": None},
              {"done_s": 18.8, "phase": "restore", "action": "restore", "error": None}]
    metrics = (Metric("iops", 1000.0, "op/s", {"op": "read", "phase": "before"}),
               Metric("iops", 500.0, "op/s", {"op": "read", "phase": "fail"}),
               Metric("iops", 700.0, "op/s", {"op": "read", "phase": "restore"}),
               Metric("stall_seconds", 0.0, "s"),
               Metric("recovery_seconds", None, "s", {"op": "read", "after": "fail"},
                      "not recovered by the end of the run"),
               Metric("rebuild_seconds", 31.4, "s", note="projected"),
               Metric("rebuild_expected_seconds", 30.0, "s"),
               Metric("rebuild_share", 0.5, ""),
               Metric("workload_share", 0.25, "", {"op": "read", "phase": "restore"}),
               Metric("io_errors", 0.0, ""))
    faulted = make_run("r1", {"iops": 700.0}, 1, started=0.0,
                       annotations={"faults": {"events": events}},
                       parsed_extra=Parsed(metrics))
    faulted = replace(faulted, parsed=Parsed(faulted.metrics + metrics))
    plain = make_run("plain", {"iops": 500.0}, 1, started=10.0)
    report = load(make_db(tmp_path / "f.db", [faulted, plain]))
    table = phaseview.phase_table(report)
    assert table.rows == (("r1", "w", "1", "read",
                           "before 1000, fail 500 (50 %), restore 700 (70 %)", "0.0",
                           "fail not recovered",
                           "31.4 (expected 30.0); of the cap: rebuild 50 %, workload 25 %",
                           "0.0", "—", "—"),)
    markdown = report_markdown(report)
    assert "## Faults: each phase of each faulted run" in markdown


def _faulted(target: str, rep: int, before: float, fail: float) -> object:
    events = [{"done_s": 8.8, "phase": "fail", "action": "fail", "error": None}]
    metrics = (Metric("iops", before, "op/s", {"op": "read", "phase": "before"}),
               Metric("iops", fail, "op/s", {"op": "read", "phase": "fail"}))
    run = make_run(target, {"iops": (before + fail) / 2}, rep, started=float(rep),
                   annotations={"faults": {"events": events}})
    return replace(run, parsed=Parsed(run.metrics + metrics))


def test_the_answer_compares_targets_per_phase_as_shares_of_before(tmp_path: Path) -> None:
    # r10 keeps 960/1000 and 950/1000 (median 95.5 %); r1 keeps 250/500, 260/500, 240/500.
    runs = [_faulted("r10", 1, 1000.0, 960.0), _faulted("r10", 2, 1000.0, 950.0),
            _faulted("r1", 1, 500.0, 250.0), _faulted("r1", 2, 500.0, 260.0),
            _faulted("r1", 3, 500.0, 240.0)]
    report = load(make_db(tmp_path / "f.db", runs))  # type: ignore[arg-type]
    assert phaseview.answer_lines(report, "w") == [
        "  under fail: r10 keeps 96 % of its IOPS, r1 50 % (median of 5 runs)"]
    assert phaseview.answer_lines(report, "other") == []
    assert "  under fail: r10 keeps 96 % of its IOPS, r1 50 % (median of 5 runs)" in \
        answer.render(report)


def test_the_chart_note_names_fault_phases_not_bursts(tmp_path: Path) -> None:
    series = Series("iops", "op/s", tuple((float(t), 1000.0 if t <= 8 else 500.0)
                                          for t in range(1, 31)), {"op": "read"})
    run = _faulted("r1", 1, 1000.0, 500.0)
    run = replace(run, parsed=Parsed(run.metrics, (series,)))  # type: ignore[attr-defined]
    report = load(make_db(tmp_path / "c.db", [run]))  # type: ignore[list-item]
    (chart,) = [c for c in all_charts(report, ReportOptions()) if c.kind == "series"]
    assert "blue: fault phases (labelled with their level)" in chart.svg
    assert "burst / warm-up" not in chart.svg


def test_the_verify_verdict_says_whether_a_loss_was_expected() -> None:
    ok = {"verdict": "nothing lost (16 MiB checked)", "nothing_lost": True,
          "expected": "nothing lost"}
    assert phaseview.verify_words(ok) == "nothing lost (16 MiB checked)"
    lost = {"verdict": "2 blocks (8 KiB) lost or damaged", "nothing_lost": False}
    assert phaseview.verify_words({**lost, "expected": "nothing lost"}).endswith(
        "NOT expected, the faults should have lost nothing")
    raid0 = phaseview.verify_words({**lost, "expected": "md raid0 keeps no copy"})
    assert raid0 == "2 blocks (8 KiB) lost or damaged (expected: md raid0 keeps no copy)"
    assert phaseview.verify_words({"skipped": "no verify pass for dd"}) == (
        "not checked: no verify pass for dd")
    assert phaseview.verify_words(None) == "—"
