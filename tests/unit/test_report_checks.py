"""Verdict wiring and the report's warnings, on databases built through Store.save_run."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from support import load, make_db, make_run
from volbench import report
from volbench.cli.main import main
from volbench.core import metricinfo as metrics
from volbench.core.model import Histogram, Parsed, RunResult, Series, Status
from volbench.report.options import ReportOptions
from volbench.report.verdicts import VerdictRow
from volbench.stats import Verdict


def _pairs(
    a: list[float], b: list[float], metric: str = "iops", tags: dict[str, str] | None = None
) -> list[RunResult]:
    """Runs of targets base and cand, interleaved as the runner would."""
    runs = []
    t = 0.0
    for i in range(max(len(a), len(b))):
        for target, values in (("base", a), ("cand", b)):
            if i < len(values):
                runs.append(make_run(target, {metric: values[i]}, i + 1, started=t, tags=tags))
                t += 10
    return runs


def _verdict(rep: report.Report, target: str = "cand", metric: str = "iops") -> VerdictRow:
    return next(v for v in rep.verdicts if v.target == target and v.candidate.metric == metric)


def test_clearly_different_pair_is_faster_or_slower(tmp_path: Path) -> None:
    rng = random.Random(4)
    base = [1000 + rng.gauss(0, 10) for _ in range(5)]
    fast = [1500 + rng.gauss(0, 10) for _ in range(5)]
    rep = load(make_db(tmp_path / "x.db", _pairs(base, fast)))
    v = _verdict(rep)
    assert v.comparison is not None and v.comparison.verdict is Verdict.BETTER
    # The effect is the ratio of geometric means, computed here on its own.
    ratio = math.exp(statistics.fmean(map(math.log, fast)) - statistics.fmean(map(math.log, base)))
    assert v.phrase.startswith(f"faster: +{(ratio - 1) * 100:.1f} % [+")
    # Latency: lower is better, so a higher latency is slower.
    rep = load(
        make_db(
            tmp_path / "y.db",
            _pairs([0.001] * 3 + [0.00101], [0.002, 0.00201, 0.00199, 0.002], "lat_mean"),
        )
    )
    v = _verdict(rep, metric="lat_mean")
    assert v.comparison is not None and v.comparison.verdict is Verdict.WORSE
    assert v.phrase.startswith("slower: ×2") or v.phrase.startswith("slower: +")


def test_identical_distributions_give_no_difference(tmp_path: Path) -> None:
    values = [1000.0, 1002.0, 998.0, 1001.0, 999.0, 1000.5, 999.5, 1000.0]
    rep = load(make_db(tmp_path / "x.db", _pairs(values, list(reversed(values)))))
    v = _verdict(rep)
    assert v.comparison is not None and v.comparison.verdict is Verdict.EQUIVALENT
    assert v.phrase == "no difference beyond ±2 %"


def test_two_runs_with_big_spread_are_inconclusive_with_runs_needed(tmp_path: Path) -> None:
    rep = load(make_db(tmp_path / "x.db", _pairs([800.0, 1200.0], [900.0, 1300.0])))
    v = _verdict(rep)
    assert v.comparison is not None and v.comparison.verdict is Verdict.INCONCLUSIVE
    # ~30 % spread from 2 runs: even 1000 runs per side are not promised to settle ±2 %.
    assert v.phrase.startswith("inconclusive — more than 1000 runs per side needed; "
                               "rules out changes beyond -66.4 % and +262.3 %; "
                               "run-to-run CV 28 %: decide with longer runs")
    assert v.comparison.runs_needed == 1000 and v.comparison.runs_needed_capped
    assert any(w.kind == "few-runs" for w in rep.warnings)
    details = ReportOptions(details=True)
    assert report.render(rep, "table", details).count("runs per side needed") == 1


def test_threshold_per_metric_comes_from_the_experiment(tmp_path: Path) -> None:
    base = [1000.0, 1001.0, 999.0, 1000.0, 1000.0]
    cand = [1050.0, 1051.0, 1049.0, 1050.0, 1050.0]  # +5 %, very tight
    strict = load(make_db(tmp_path / "a.db", _pairs(base, cand)))
    assert _verdict(strict).verdict == "better"
    loose = load(
        make_db(
            tmp_path / "b.db",
            _pairs(base, cand),
            document={"name": "demo", "thresholds": {"iops": 0.10}},
        )
    )
    assert _verdict(loose).verdict == "equivalent"
    assert _verdict(loose).phrase == "no difference beyond ±10 %"


def test_baseline_defaults_to_the_first_target_and_follows_the_document(tmp_path: Path) -> None:
    runs = _pairs([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])
    assert load(make_db(tmp_path / "a.db", runs)).baseline == "base"
    rep = load(make_db(tmp_path / "b.db", runs, document={"name": "d", "baseline": "cand"}))
    assert rep.baseline == "cand"
    assert {v.target for v in rep.verdicts} == {"base"}


def test_cpu_bound_and_descriptive_metrics_are_not_compared(tmp_path: Path) -> None:
    runs = _pairs(
        [100.0, 110.0, 90.0],
        [200.0, 210.0, 190.0],
        "seq_out_char",
        tags={"op": "write", "cpu_bound": "1"},
    )
    runs += _pairs([10.0, 11.0, 9.0], [20.0, 21.0, 19.0], "cpu_usr")
    rep = load(make_db(tmp_path / "x.db", runs), ReportOptions(("all",)))
    assert rep.verdicts == []
    assert {s.metric for s in rep.summaries} == {"seq_out_char", "cpu_usr"}


def test_direction_table() -> None:
    assert metrics.info("iops", "op/s").higher_is_better is True
    assert metrics.info("tps", "tx/s").higher_is_better is True
    assert metrics.info("latency_avg", "s").higher_is_better is False
    assert metrics.info("clat_p99.9", "s").higher_is_better is False
    assert metrics.info("lat_max", "s").higher_is_better is None  # extremes: not compared
    assert metrics.info("io_bytes", "B").higher_is_better is None
    # A tool this table does not list: decided by the unit.
    assert metrics.info("seq_in_block", "B/s").higher_is_better is True
    assert metrics.info("rand_create_latency", "s").higher_is_better is False
    assert metrics.cpu_bound({"cpu_bound": "true"}) and not metrics.cpu_bound({"cpu_bound": "0"})
    assert metrics.is_primary("iops", "op/s") and not metrics.is_primary("clat_p50", "s")


def test_merged_percentiles_differ_from_averaged_p99(tmp_path: Path) -> None:
    # Run 1: 990 I/Os at 100 ns, 10 at 5000 ns → its p99 is 100 ns (990th of 1000).
    # Run 2: 10 at 100 ns, 990 at 5000 ns → its p99 is 5000 ns.
    # Averaging the p99s says 2550 ns; all 2000 I/Os together: the 1980th is 5000 ns.
    runs = []
    for rep, bins, p99 in (
        (1, ((100e-9, 990), (5000e-9, 10)), 100e-9),
        (2, ((100e-9, 10), (5000e-9, 990)), 5000e-9),
    ):
        hist = Parsed((), (), (Histogram("clat", "s", bins, {"op": "read"}),))
        runs.append(make_run("a", {"clat_p99": p99}, rep, started=rep * 10.0, parsed_extra=hist))
    rep = load(make_db(tmp_path / "x.db", runs))
    merged = next(m for m in rep.percentiles if m.name == "clat")
    assert merged.samples == 2000 and merged.runs == 2
    assert merged.value(99.0) == 5000e-9
    assert merged.value(50.0) == 100e-9
    averaged = next(s for s in rep.summaries if s.metric == "clat_p99").summary.mean
    assert abs(averaged - 2550e-9) < 1e-15
    assert merged.value(99.0) != averaged
    md = report.render(rep, "markdown")
    assert "| a | w |  | clat | read | 2 | 2000 | 100 ns" not in md  # values are in µs/ns
    assert "| a | w |  | clat | read | 2 | 2000 |" in md and "5 µs" in md


def test_outliers_are_flagged_and_kept(tmp_path: Path) -> None:
    values = [100.0, 101.0, 99.0, 100.0, 250.0]
    rep = load(
        make_db(
            tmp_path / "x.db",
            [make_run("a", {"iops": v}, i + 1, started=i * 10.0) for i, v in enumerate(values)],
        )
    )
    s = next(s for s in rep.summaries if s.metric == "iops")
    assert s.summary.n == 5 and s.summary.max == 250.0  # not dropped
    assert [i for i, _ in s.outliers] == [4]
    warning = next(w for w in rep.warnings if w.kind == "outlier")
    assert "run 5 of 5" in warning.message and "kept" in warning.message
    assert "250 op/s *" in report.render(rep, "markdown")


def test_drift_across_repetitions_is_flagged(tmp_path: Path) -> None:
    values = [100.0, 104.0, 108.0, 112.0, 116.0, 120.0]  # seed 003: better run after run
    rep = load(
        make_db(
            tmp_path / "x.db",
            [make_run("a", {"iops": v}, i + 1, started=i * 10.0) for i, v in enumerate(values)],
        )
    )
    warning = next(w for w in rep.warnings if w.kind == "drift")
    assert "rises run after run" in warning.message
    flat = load(
        make_db(
            tmp_path / "y.db",
            [
                make_run("a", {"iops": v}, i + 1, started=i * 10.0)
                for i, v in enumerate([100.0, 101.0, 99.0] * 2)
            ],
        )
    )
    assert not any(w.kind == "drift" for w in flat.warnings)


def test_stalls_in_time_series_are_found_and_drawn(tmp_path: Path) -> None:
    points = tuple((float(t), 0.0 if 4 <= t <= 6 else 1000.0) for t in range(1, 11))
    series = Parsed((), (Series("iops", "op/s", points, {"op": "read"}),), ())
    rep = load(
        make_db(
            tmp_path / "x.db", [make_run("a", {"iops": 700.0}, 1, started=0.0, parsed_extra=series)]
        )
    )
    stall = rep.stalls[0][0].stalls[0]
    assert (stall.start, stall.end) == (3.0, 6.0)  # the 4 s sample covers 3–4 s
    warning = next(w for w in rep.warnings if w.kind == "stall")
    assert "longest 3.0 s" in warning.message
    html = report.render(rep, "html")
    assert html.count('class="stall"') == 1


def test_a_latency_series_that_falls_is_not_a_stall(tmp_path: Path) -> None:
    # fio's per-second mean latency (s): a drop to 1 % is faster I/O, not a stall.
    points = tuple((float(t), 1e-6 if 4 <= t <= 6 else 1e-4) for t in range(1, 11))
    series = Parsed((), (Series("lat", "s", points, {"op": "read"}),), ())
    rep = load(
        make_db(
            tmp_path / "x.db", [make_run("a", {"iops": 700.0}, 1, started=0.0, parsed_extra=series)]
        )
    )
    assert not any(w.kind == "stall" for w in rep.warnings)


def test_device_doing_far_less_io_than_the_workload_is_flagged(tmp_path: Path) -> None:
    io = 100 * 1024**2
    runs = [
        make_run(
            "a",
            {"iops": 9e5, "io_bytes": float(io)},
            rep,
            started=rep * 10.0,
            annotations={
                "device_io": {"read_bytes": io // 100, "write_bytes": 0},
                "working_set_bytes": 256 * 1024**2,
            },
        )
        for rep in (1, 2, 3)
    ]
    runs.append(
        make_run(
            "b",
            {"iops": 500.0, "io_bytes": float(io)},
            1,
            started=50.0,
            annotations={"device_io": {"read_bytes": io, "write_bytes": 0}},
        )
    )
    rep = load(make_db(tmp_path / "x.db", runs))
    cache = [w for w in rep.warnings if w.kind == "cache"]
    assert len(cache) == 1 and cache[0].target == "a"
    assert "in 3 of 3 run(s)" in cache[0].message and "1 % of 100M" in cache[0].message
    assert "working set 256M fits in RAM (8G)" in cache[0].message
    md = report.render(rep, "markdown")
    assert "| 1 | a | w |  | 1 | ok | 5.0 s | r 1 % |  |" in md
    assert "| 4 | b | w |  | 1 | ok | 5.0 s | r 100 % |  |" in md


def test_the_json_report_marks_the_flagged_runs_through_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI streams every run's JSON from the store and splices the findings in."""
    test_device_doing_far_less_io_than_the_workload_is_flagged(tmp_path)
    assert main(["report", "--db", str(tmp_path / "x.db"), "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["target"] for r in runs] == ["a", "a", "a", "b"]
    assert [r.get("io_check", {}).get("short") for r in runs] == [["read"]] * 3 + [None]
    assert runs[0]["io_check"]["device_bytes"]["read"] == 100 * 1024**2 // 100
    assert {m["name"] for m in runs[3]["metrics"]} == {"iops", "io_bytes"}


def test_failed_runs_and_targets_are_reported_not_averaged(tmp_path: Path) -> None:
    runs = [make_run("a", {"iops": 100.0}, rep, started=rep * 10.0) for rep in (1, 2, 3)]
    runs.append(
        make_run("a", {}, 4, started=50.0, status=Status.FAILED, error="exit code 1: fio: bad")
    )
    path = make_db(tmp_path / "x.db", runs)
    from volbench.store.db import Store

    with Store(path) as store:
        store.save_target(1, "broken", "loopdisk", "failed", {}, "mkfs failed: no space")
    rep = load(path)
    assert next(s for s in rep.summaries if s.metric == "iops").summary.n == 3
    kinds = {w.kind: w.message for w in rep.warnings}
    assert "1 failed" in kinds["failed-runs"] and "exit code 1: fio: bad" in kinds["failed-runs"]
    assert "broken could not be built: mkfs failed" in kinds["failed-target"]


def test_caches_not_dropped_is_reported(tmp_path: Path) -> None:
    why = "caches not dropped (Permission denied; needs root)"
    runs = [
        make_run("a", {"iops": 100.0}, rep, started=rep * 10.0, annotations={"caches": why})
        for rep in (1, 2, 3)
    ]
    rep = load(make_db(tmp_path / "x.db", runs))
    warning = next(w for w in rep.warnings if w.kind == "caches")
    assert warning.message.startswith(f"3 measured run(s) started with warm caches: {why}")


def test_runs_per_case_is_reported(tmp_path: Path) -> None:
    runs = [make_run("a", {"iops": 100.0 + rep}, rep, started=rep * 10.0) for rep in range(1, 6)]
    runs += [
        make_run("b", {"iops": 100.0 + rep}, rep, started=100 + rep * 10.0) for rep in range(1, 4)
    ]
    text = report.render(load(make_db(tmp_path / "x.db", runs)), "table")
    assert "runs per case: 3–5" in text.splitlines()[1]


def test_pgbench_like_workload_gets_tps_and_latency_charts(tmp_path: Path) -> None:
    from volbench.report import charts

    runs = [
        make_run(
            t,
            {"tps": tps * (1 + 0.01 * rep), "latency_avg": 0.002 / tps * 1000},
            rep,
            started=rep * 100.0 + i,
            workload="pgbench",
            params={"scale": 10, "clients": 4},
            tags={},
        )
        for rep in (1, 2, 3)
        for i, (t, tps) in enumerate((("xfs", 1000.0), ("nfs", 800.0)))
    ]
    rep = load(make_db(tmp_path / "x.db", runs))
    made = charts.all_charts(rep, ReportOptions())
    # the answer's forest plot first (report/forest.py), then the bars
    assert [c.slug for c in made] == ["pgbench-answer", "pgbench-tps", "pgbench-latency_avg"]
    assert made[0].kind == "forest" and "Answer — pgbench: each target against xfs" in made[0].svg
    made = made[1:]
    assert "transactions/s (tps) — pgbench" in made[0].svg
    v = next(v for v in rep.verdicts if v.candidate.metric == "tps")
    assert v.target == "nfs" and v.phrase.startswith("slower: -20.0 % [")


def test_drift_that_cannot_be_tested_is_said_so_not_passed_over(tmp_path: Path) -> None:
    # Three runs rising 10 % each: Spearman's exact p is 1/3 at best, so "no drift
    # warning" must not read as "no drift".
    rep = load(make_db(tmp_path / "x.db", [make_run("a", {"iops": v}, i + 1, started=i * 10.0)
                                          for i, v in enumerate([100.0, 110.0, 121.0])]))
    assert not any(w.kind == "drift" for w in rep.warnings)
    (untested,) = [w for w in rep.warnings if w.kind == "drift-untested"]
    assert "drift not testable with 3 runs" in untested.message
    assert "smallest possible p 0.333" in untested.message
    five = load(make_db(tmp_path / "y.db", [make_run("a", {"iops": v}, i + 1, started=i * 10.0)
                                           for i, v in enumerate([100.0, 101.0, 99.0, 100.0,
                                                                  100.5])]))
    assert not any(w.kind.startswith("drift") for w in five.warnings)
    assert "None: no failed runs" in report.render(five, "html")
    assert "None: no failed runs" not in report.render(rep, "html")


def test_a_wild_run_among_three_is_not_an_outlier_by_the_fixed_35_rule(tmp_path: Path) -> None:
    # |M| of the 130 among [100, 103, 130] is 0.6745 * 27 / 3 = 6.1 > 3.5, but 3-run
    # samples of clean normal data exceed |M| = 21.96 one time in twenty.
    rep = load(make_db(tmp_path / "x.db", [make_run("a", {"iops": v}, i + 1, started=i * 10.0)
                                          for i, v in enumerate([100.0, 103.0, 130.0])]))
    assert not any(w.kind == "outlier" for w in rep.warnings)


def test_a_failed_run_retried_ok_is_no_longer_reported_as_missing(tmp_path: Path) -> None:
    runs = [make_run("a", {"iops": 100.0}, rep, started=rep * 10.0) for rep in (1, 2)]
    runs.append(make_run("a", {}, 3, started=30.0, status=Status.FAILED, error="exit code 1"))
    runs.append(make_run("a", {}, 4, started=40.0, status=Status.FAILED, error="exit code 2"))
    # `run --retry-failed` ran repetition 3 again, and it finished OK this time.
    runs.append(make_run("a", {"iops": 101.0}, 3, started=90.0))
    rep = load(make_db(tmp_path / "x.db", runs))
    kinds = {w.kind: w.message for w in rep.warnings}
    assert kinds["failed-runs"].startswith("1 run(s) did not finish OK")
    assert "rep 4" in kinds["failed-runs"] and "rep 3" not in kinds["failed-runs"]
    assert kinds["retried-runs"].startswith("1 failed run(s) were run again")
    assert next(s for s in rep.summaries if s.metric == "iops").summary.n == 3
