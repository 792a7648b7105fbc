"""pgbench's parsers on every captured output (12.22, 13.16, 14.2, 15.20, 16.2 and 18.6
run here; 16.2's seed run and 9.4 copied), the experiment fields of the pgbench workload,
and the importer.

Expected values are read off the captured text itself (the numbers pgbench printed),
converted to base units; the per-transaction logs are checked against an independent
nearest-rank computation over the raw latencies.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from support import DATA
from volbench.core.errors import ExperimentError, ParseError
from volbench.core.model import Metric, Parsed, Series
from volbench.engine.experiment import parse_document
from volbench.engine.importer import import_files
from volbench.engine.plan import make_plan
from volbench.store.db import Store
from volbench.system.host import hostinfo
from volbench.workloads import pgbench
from volbench.workloads import pgbench_parse as pp

PG = DATA / "pgbench"
# .rows and .cut: a power cut's ledger read back (test_pgbench_ledger.py), not pgbench's.
CAPTURES = sorted(p for p in PG.glob("*/*")
                  if p.suffix not in (".cmd", ".exitcode", ".sql", ".rows", ".cut"))


def metric(metrics: tuple[Metric, ...] | list[Metric], name: str, **tags: str) -> float:
    found = [m for m in metrics if m.name == name and dict(m.tags) == tags]
    assert len(found) == 1, f"{name} {tags}: {found}"
    assert found[0].value is not None
    return found[0].value


def series(parsed: tuple[Series, ...], name: str) -> list[tuple[float, float]]:
    (found,) = [s for s in parsed if s.name == name]
    return list(found.points)


# What each captured run summary printed: (tps, latency average ms, header fields).
RUNS: dict[str, tuple[float, float, dict[str, Any]]] = {
    # Aborted by its server's death (exit code 2): the summary is printed all the same.
    "15.18/cut-ledger.stdout": (305.303644, 6.516, {"clients": 2, "threads": 1,
                                                    "duration": 20.0}),
    "15/run-c4-j2-T3-P1.stdout": (3261.545765, 1.223, {"clients": 4, "threads": 2,
                                                       "duration": 3.0, "scale": 2}),
    "15/run-c2-t50.stdout": (2447.561005, 0.817, {"clients": 2, "transactions": 50}),
    "15/run-select-only-S.stdout": (105801.950488, 0.019, {"script": "select-only"}),
    "15/run-simple-update-N.stdout": (2836.67864, 0.705, {"script": "simple-update"}),
    "15/run-custom-script.stdout": (21433.808901, 0.093, {
        "script": "/work/main/tests/data/pgbench/15/custom-script.sql", "scale": 1}),
    "15/run-builtin-weights.stdout": (13842.133937, 0.144, {"script": "multiple scripts"}),
    "15/run-r-per-statement.stdout": (2903.285159, 0.689, {"duration": 2.0}),
    "15.18/run-r-two-scripts.stdout": (409.454987, 4.885, {"script": "multiple scripts",
                                                           "duration": 2.0}),
    "15.18/run-report-per-command-commit.stdout": (543.5605, 3.679, {
        "script": "/work/wt/commit/tests/data/pgbench/commit-script.sql", "scale": 1}),
    "15.18/run-r-synchronous-commit-off.stdout": (759.071429, 2.635, {"script": "tpcb-like",
                                                                      "clients": 2}),
    "15/run-rate-latency-limit.stdout": (295.007105, 0.770, {"duration": 3.0}),
    "15/run-prepared-progress-timestamp.stdout": (3512.921551, 0.568,
                                                  {"query_mode": "prepared"}),
    "15/run-connect-C.stdout": (377.137006, 5.303, {"script": "select-only"}),
    "15/run-log-aggregate.stdout": (2575.391373, 0.777, {}),
    "15/run-log-aggregate-rate.stdout": (305.113760, 0.844, {}),
    "15/run-log-l.stdout": (2563.135319, 0.780, {"threads": 2}),
    "16.2/run-c200-t100-scale2500.txt": (1093.966050, 182.821, {
        "scale": 2500, "clients": 200, "threads": 1, "transactions": 100,
        "script": "tpcb-like"}),
    "16.2/run-c4-j2-T3-P1.stdout": (1017.917074, 3.919, {"clients": 4, "threads": 2,
                                                         "duration": 3.0, "scale": 2}),
    "16.2/run-c2-t50.stdout": (731.133110, 2.735, {"clients": 2, "transactions": 50}),
    "16.2/run-select-only-S.stdout": (18411.405663, 0.109, {"script": "select-only"}),
    "16.2/run-r-per-statement.stdout": (803.905139, 2.488, {"duration": 2.0}),
    "18.6/run-c4-j2-T3-P1.stdout": (1398.658864, 2.855, {"clients": 4, "threads": 2,
                                                         "duration": 3.0, "scale": 2}),
    "18.6/run-c2-t50.stdout": (1039.198570, 1.925, {"clients": 2, "transactions": 50}),
    "18.6/run-select-only-S.stdout": (17875.535351, 0.112, {"script": "select-only"}),
    "18.6/run-r-per-statement.stdout": (851.132432, 2.350, {"duration": 2.0}),
    # 12 and 13 print both tps lines, as 9.4 does; 14 the one line and the version first.
    "12.22/run-c4-j2-T3-P1.stdout": (2075.296035, 1.920, {"clients": 4, "threads": 2,
                                                          "duration": 3.0, "scale": 2}),
    "12.22/run-c2-t50.stdout": (1929.562144, 1.085, {"clients": 2, "transactions": 50}),
    "12.22/run-select-only-S.stdout": (29822.642792, 0.067, {"script": "select-only"}),
    "12.22/run-r-per-statement.stdout": (1545.813297, 1.295, {"duration": 2.0}),
    "13.16/run-c4-j2-T3-P1.stdout": (1497.732305, 2.662, {"clients": 4, "threads": 2,
                                                          "duration": 3.0, "scale": 2}),
    "13.16/run-c2-t50.stdout": (529.537954, 3.870, {"clients": 2, "transactions": 50}),
    "13.16/run-select-only-S.stdout": (28862.256263, 0.069, {"script": "select-only"}),
    "13.16/run-r-per-statement.stdout": (2202.621044, 0.910, {"duration": 2.0}),
    "14.2/run-c4-j2-T3-P1.stdout": (2328.458804, 1.713, {"clients": 4, "threads": 2,
                                                         "duration": 3.0, "scale": 2}),
    "14.2/run-c2-t50.stdout": (2035.209118, 0.983, {"clients": 2, "transactions": 50}),
    "14.2/run-select-only-S.stdout": (32357.860413, 0.062, {"script": "select-only"}),
    "14.2/run-r-per-statement.stdout": (1131.890177, 1.767, {"duration": 2.0}),
    "12.22/run-rate-latency-limit.stdout": (301.854447, 1.831, {"duration": 3.0}),
    "13.16/run-rate-latency-limit.stdout": (224.047181, 4.002, {"duration": 3.0}),
    "14.2/run-rate-latency-limit.stdout": (278.839772, 2.246, {"duration": 3.0}),
    "9.4/run-c20-T300-scale20-standard-disk.txt": (1160.153345, 17.222, {
        "scale": 20, "clients": 20, "duration": 300.0, "script": "tpcb-like"}),
    "9.4/run-c20-T300-scale20-fast-disk.txt": (1549.489277, 12.909, {"scale": 20}),
    "9.4/run-c20-T300-scale1000-standard-disk.txt": (343.719059, 58.204, {"scale": 1000}),
    "9.4/run-c20-T300-scale1000-fast-disk.txt": (1383.195432, 14.460, {"scale": 1000}),
    "9.4/pkb-run-c16-T5-r-P1.stdout": (13.062579, 1108.418, {"clients": 16, "threads": 16}),
}
# init outputs: (total seconds or None, {phase: seconds}, rows or None).
INITS: dict[str, tuple[float | None, dict[str, float], int | None]] = {
    "15/init-s2.stderr": (0.21, {"drop_tables": 0.00, "create_tables": 0.00,
                                 "client_side_generate": 0.11, "vacuum": 0.04,
                                 "primary_keys": 0.05}, 200000),
    "15/init-s2-quiet.stderr": (0.20, {"client_side_generate": 0.11}, 200000),
    "15/init-s2-steps-dtgvp.stderr": (0.22, {"primary_keys": 0.06}, 200000),
    "15/init-s2-server-side-dtGvp.stderr": (0.35, {"server_side_generate": 0.25}, None),
    "15/init-s2-foreign-keys.stderr": (0.27, {"foreign_keys": 0.02}, 200000),
    "16.2/init-s2.stderr": (0.38, {"client_side_generate": 0.18, "primary_keys": 0.12}, 200000),
    "16.2/init-s2-server-side-dtGvp.stderr": (0.41, {"server_side_generate": 0.24}, None),
    # 18 names the table in its row progress lines.
    "18.6/init-s2.stderr": (0.54, {"client_side_generate": 0.25, "vacuum": 0.17}, 200000),
    "18.6/init-s2-server-side-dtGvp.stderr": (0.58, {"server_side_generate": 0.36}, None),
    # 12 prints no `done in` line (per-phase times came with 13): rows only.
    "12.22/init-s2.stderr": (None, {"client_side_generate": 0.17}, 200000),
    "13.16/init-s2.stderr": (0.37, {"drop_tables": 0.00, "create_tables": 0.00,
                                    "client_side_generate": 0.18, "vacuum": 0.09,
                                    "primary_keys": 0.11}, 200000),
    "13.16/init-s2-server-side-dtGvp.stderr": (0.33, {"server_side_generate": 0.21}, None),
    "14.2/init-s2.stderr": (0.29, {"client_side_generate": 0.14, "primary_keys": 0.07},
                            200000),
    "14.2/init-s2-server-side-dtGvp.stderr": (0.33, {"server_side_generate": 0.19}, None),
    "9.4/init-s1000-standard-disk-last-line.txt": (None, {"client_side_generate": 203.96},
                                                   100_000_000),
    "9.4/init-s1000-fast-disk-last-line.txt": (None, {"client_side_generate": 109.54},
                                               100_000_000),
}
# init outputs with neither times nor rows (12 without a data generation step): only the
# caller's wall-clock time makes them a result.
UNTIMED_INITS = ("12.22/init-s2-steps-dtvp.stderr",)
# stderr captures with -P progress lines: (number of lines, first tps).
PROGRESS = {
    "15.18/cut-ledger.stderr": (3, 269.0),  # the server killed ~3 s in (a power cut)
    "15/run-c4-j2-T3-P1.stderr": (3, 2992.7),
    "15/run-rate-latency-limit.stderr": (3, 293.0),
    "15/run-prepared-progress-timestamp.stderr": (2, 3438.8),
    "16.2/run-c4-j2-T3-P1.stderr": (2, 1178.8),
    "18.6/run-c4-j2-T3-P1.stderr": (3, 1428.9),
    "9.4/pkb-run-c16-T5-r-P1.stderr": (5, 7.0),
    "12.22/run-c4-j2-T3-P1.stderr": (3, 1968.9),
    "13.16/run-c4-j2-T3-P1.stderr": (3, 1672.0),
    "14.2/run-c4-j2-T3-P1.stderr": (3, 2271.9),
    "12.22/run-rate-latency-limit.stderr": (3, 256.0),
    "13.16/run-rate-latency-limit.stderr": (3, 171.8),
    "14.2/run-rate-latency-limit.stderr": (2, 247.0),
}
TXLOGS = ("15/run-log-l.thread0.log", "15/run-log-l.thread1.log", "15.18/cut-ledger.txlog")
AGGREGATE = {"15/run-log-aggregate.aggregate-log": [815, 2827, 2302],
             "15/run-log-aggregate-rate.aggregate-log": [79, 313, 301]}
# Outputs that are not a finished run or init: the parsers must refuse them.
NOT_RESULTS = ("error-", "version.", ".stdout")


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", CAPTURES, ids=_key)
def test_every_capture_is_covered_and_parses_as_expected(path: Path) -> None:
    key, text = _key(path), path.read_text()
    if key in RUNS:
        tps, latency_ms, header = RUNS[key]
        report = pp.parse_run(text, key)
        assert metric(report.metrics, "tps") == pytest.approx(tps)
        assert metric(report.metrics, "latency_avg") == pytest.approx(latency_ms / 1000)
        params = pp.params_from_header(report.header)
        for field, value in header.items():
            got = report.header["transaction_type"] if value == "multiple scripts" \
                else params[field]
            assert got == value, field
    elif key in INITS:
        total, phases, rows = INITS[key]
        parsed = pp.parse_init(text, key)
        if total is not None:
            assert metric(parsed.metrics, "init_time") == pytest.approx(total)
        for phase, seconds in phases.items():
            assert metric(parsed.metrics, f"init_{phase}") == pytest.approx(seconds)
        assert (rows is None) == (not any(m.name == "init_rows" for m in parsed.metrics))
        if rows is not None:
            assert metric(parsed.metrics, "init_rows") == rows
    elif key in UNTIMED_INITS:
        with pytest.raises(ParseError, match="neither"):
            pp.parse_init(text, key)
        parsed = pp.parse_init(text, key, elapsed=1.25)
        assert [(m.name, m.value) for m in parsed.metrics] == [("init_time", 1.25)]
    elif key in PROGRESS:
        count, first = PROGRESS[key]
        points = series(pp.parse_progress(text), "tps")
        assert len(points) == count and points[0] == (1.0, first)
    elif key in TXLOGS:
        _check_txlog(text)
    elif key in AGGREGATE:
        assert [v for _, v in series(pp.parse_aggregate_log(text), "tps")] == AGGREGATE[key]
    elif path.suffix == ".stderr":  # stderr of runs without -P: nothing to plot
        assert pp.parse_progress(text) == ()
    else:
        assert any(mark in path.name for mark in NOT_RESULTS), f"{key}: add an expectation"
        with pytest.raises(ParseError):
            pp.parse_any(text, key)


def _check_txlog(text: str) -> None:
    """Histogram percentiles agree with nearest-rank over the raw latencies (±0.5 %)."""
    raw = sorted(int(line.split()[2]) for line in text.splitlines() if line.strip())
    log = pp.parse_txlogs([text])
    assert log.transactions == len(raw) == sum(log.bins.values()) and not log.truncated
    metrics, (hist,) = pp.latency_metrics(log, 1.0)
    for p in pp.PERCENTILES:
        exact = raw[math.ceil(p / 100 * len(raw)) - 1] / 1e6
        assert metric(metrics, f"latency_p{p:g}") == pytest.approx(exact, rel=0.005)
    assert dict(hist.bins) == dict(log.bins) and hist.unit == "s"


def test_9_4_reports_both_tps_lines_and_keeps_the_one_without_connections() -> None:
    report = pp.parse_run((PG / "9.4/run-c20-T300-scale20-standard-disk.txt").read_text())
    assert metric(report.metrics, "tps_including_connections") == pytest.approx(1159.802499)
    assert metric(report.metrics, "tps") == pytest.approx(1160.153345)
    assert metric(report.metrics, "transactions") == 348401


def test_16_2_initial_connection_time_and_failed_count() -> None:
    report = pp.parse_run((PG / "16.2/run-c200-t100-scale2500.txt").read_text())
    assert metric(report.metrics, "initial_connection_time") == pytest.approx(0.754209)
    assert metric(report.metrics, "failed_transactions") == 0
    assert metric(report.metrics, "transactions") == 20000


def test_several_scripts_get_tagged_sections() -> None:
    report = pp.parse_run((PG / "15/run-builtin-weights.stdout").read_text())
    assert metric(report.metrics, "tps", script="select-only") == pytest.approx(12417.848443)
    assert metric(report.metrics, "tps", script="tpcb-like") == pytest.approx(1424.285493)
    assert metric(report.metrics, "latency_stddev", script="tpcb-like") == pytest.approx(
        0.815e-3)


def test_statement_latencies_old_and_new_layout() -> None:
    new = pp.parse_run((PG / "15/run-r-per-statement.stdout").read_text()).metrics
    old = pp.parse_run((PG / "9.4/pkb-run-c16-T5-r-P1.stdout").read_text()).metrics
    upd = "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;"
    assert metric(new, "statement_latency", statement=upd, n="8") == pytest.approx(0.085e-3)
    assert metric(new, "statement_failures", statement=upd, n="8") == 0
    assert metric(old, "statement_latency", statement=upd, n="11") == pytest.approx(
        0.558017753)
    assert len([m for m in new if m.name == "statement_latency"]) == 11
    assert not any(m.name == "statement_failures" for m in old)


def test_rate_limited_run_reports_lag_skipped_and_late() -> None:
    m = pp.parse_run((PG / "15/run-rate-latency-limit.stdout").read_text()).metrics
    assert metric(m, "skipped_transactions") == 3
    assert metric(m, "late_transactions") == 20
    assert [x.note for x in m if x.name == "late_transactions"] == [
        "above the 2.0 ms latency limit"]
    assert metric(m, "schedule_lag_max") == pytest.approx(2.968e-3)
    lag = series(pp.parse_progress((PG / "15/run-rate-latency-limit.stderr").read_text()),
                 "schedule_lag")
    assert [v for _, v in lag] == pytest.approx([0.107e-3, 0.092e-3, 0.112e-3])


@pytest.mark.parametrize(("version", "skipped", "late", "lag_max", "first_lag"), [
    ("12.22", 38, 166, 4.748e-3, 0.194e-3), ("13.16", 157, 321, 10.940e-3, 0.347e-3),
    ("14.2", 65, 274, 9.120e-3, 0.320e-3)])
def test_rate_limited_runs_of_12_to_14_as_a_load_curve_step_runs(
        version: str, skipped: int, late: int, lag_max: float, first_lag: float) -> None:
    m = pp.parse_run((PG / f"{version}/run-rate-latency-limit.stdout").read_text()).metrics
    assert metric(m, "skipped_transactions") == skipped
    assert metric(m, "late_transactions") == late
    assert metric(m, "schedule_lag_max") == pytest.approx(lag_max)
    text = (PG / f"{version}/run-rate-latency-limit.stderr").read_text()
    assert series(pp.parse_progress(text), "schedule_lag")[0] == (1.0, pytest.approx(first_lag))


def test_reconnecting_runs_say_so() -> None:
    m = pp.parse_run((PG / "15/run-connect-C.stdout").read_text()).metrics
    (tps,) = [x for x in m if x.name == "tps"]
    assert "reconnect" in tps.note
    assert metric(m, "connection_time_avg") == pytest.approx(2.566e-3)


def test_progress_in_base_units_and_epoch_timestamps_made_relative() -> None:
    parsed = pp.parse_progress((PG / "15/run-c4-j2-T3-P1.stderr").read_text())
    assert series(parsed, "latency_avg")[2] == (3.0, pytest.approx(1.144e-3))
    assert series(parsed, "latency_stddev")[1] == (2.0, pytest.approx(1.978e-3))
    stamped = pp.parse_progress(
        (PG / "15/run-prepared-progress-timestamp.stderr").read_text())
    assert [t for t, _ in series(stamped, "tps")] == pytest.approx([1.0, 2.0])
    # 9.4 prints no failed count, and the ssh warning before it is ignored.
    old = pp.parse_progress((PG / "9.4/pkb-run-c16-T5-r-P1.stderr").read_text())
    assert {s.name for s in old} == {"tps", "latency_avg", "latency_stddev"}


def test_an_interval_without_transactions_keeps_its_zero_tps() -> None:
    text = ("progress: 1.0 s, 95.0 tps, lat 41.9 ms stddev 9.1, 0 failed\n"
            "progress: 2.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed\n"
            "progress: 3.0 s, 0.0 tps, lat 0.000 ms stddev 0.000, 0 failed\n")
    parsed = pp.parse_progress(text)
    assert series(parsed, "tps") == [(1.0, 95.0), (2.0, 0.0), (3.0, 0.0)]
    assert [t for t, _ in series(parsed, "latency_avg")] == [1.0, 3.0]


def test_an_aborted_run_is_refused_with_pgbench_s_error() -> None:
    text = "".join((PG / f"15/error-script-fails.{s}").read_text() for s in ("stdout", "stderr"))
    with pytest.raises(ParseError, match=r"aborted.*no_such_table"):
        pp.parse_run(text)


def test_12_prints_no_init_time_so_the_wall_clock_time_stands_in() -> None:
    text = (PG / "12.22/init-s2.stderr").read_text()
    assert "done." in text and "done in" not in text
    parsed = pp.parse_init(text, elapsed=0.61)
    (init_time,) = [m for m in parsed.metrics if m.name == "init_time"]
    assert init_time.value == 0.61 and "wall-clock" in init_time.note
    assert metric(parsed.metrics, "init_client_side_generate") == pytest.approx(0.17)
    assert metric(parsed.metrics, "init_rows") == 200000
    # Untimed by the caller (an imported output): no init time rather than a made-up one.
    assert not [m for m in pp.parse_init(text).metrics if m.name == "init_time"]
    # From 13 on pgbench's own figure wins over the wall clock.
    timed = pp.parse_init((PG / "13.16/init-s2.stderr").read_text(), elapsed=0.61)
    assert metric(timed.metrics, "init_time") == pytest.approx(0.37)


def test_init_runs_pass_their_wall_clock_time_to_the_parser() -> None:
    from volbench.workloads.base import RunOutput

    spec = spec_of(scale=2, mode="init")
    (params,) = pgbench.cases(spec)
    outputs = {"stderr": (PG / "12.22/init-s2.stderr").read_text()}
    parsed = pgbench.parse_output(spec, params, RunOutput(outputs, elapsed=0.72))
    assert metric(parsed.metrics, "init_time") == pytest.approx(0.72)


def test_18_row_progress_names_the_table_and_still_gives_rows_and_rate() -> None:
    parsed = pp.parse_init((PG / "18.6/init-s2.stderr").read_text())
    assert metric(parsed.metrics, "init_rows") == 200000
    rate = series(parsed.series, "init_rate")
    assert [t for t, _ in rate] == [0.12, 0.23]
    assert [r for _, r in rate] == pytest.approx([100000 / 0.12, 100000 / 0.11])


def test_init_rate_series_shows_rows_per_second() -> None:
    parsed = pp.parse_init((PG / "15/init-s2.stderr").read_text())
    # 100000 rows by 0.05 s, 200000 by 0.10 s.
    assert series(parsed.series, "init_rate") == [(0.05, pytest.approx(2e6)),
                                                  (0.10, pytest.approx(2e6))]


def test_init_rate_reveals_a_stall() -> None:
    lines = [f"{n * 100000} of 1000000 tuples ({n * 10}%) done (elapsed {t:.2f} s, "
             "remaining 1.00 s)" for n, t in enumerate([0.1, 0.2, 0.3, 5.3, 5.4], 1)]
    rates = [v for _, v in series(pp.parse_init("\n".join(lines)).series, "init_rate")]
    assert rates[3] == pytest.approx(100000 / 5.0)
    assert min(rates) == rates[3] and rates[2] == pytest.approx(1e6)


@pytest.mark.parametrize("us", [0, 1, 999, 1000, 1004, 1005, 12345, 987654, 10**7 + 1])
def test_latency_bins_keep_three_significant_digits(us: int) -> None:
    b = pp.latency_bin(us)
    assert abs(b - us) <= 0.005 * us
    assert b == us or len(str(b).rstrip("0")) <= 3


def test_truncated_log_and_failed_lines_are_counted_and_noted() -> None:
    text = "0 1 1500 0 1 2\n0 2 failed 0 1 3\n0 3 2500 0 1 4\n[volbench: cut at 32 bytes]\n"
    log = pp.parse_txlogs([text])
    assert (log.transactions, log.unfinished, log.truncated) == (2, 1, True)
    metrics, _ = pp.latency_metrics(log, 0.5)
    (p50,) = [m for m in metrics if m.name == "latency_p50"]
    assert p50.value == 0.0015 and "50% sample" in p50.note and "cut" in p50.note


def test_cache_metrics_flag_a_database_that_fits_in_memory() -> None:
    facts = json.dumps({"ram_bytes": 8 * 2**30, "shared_buffers_bytes": 128 * 2**20})
    small, note = pp.cache_metrics(facts, "23575911\n")
    assert metric(small, "db_size") == 23575911 and "shared_buffers" in note
    mid, note = pp.cache_metrics(facts, str(2 * 2**30))
    assert metric(mid, "db_size_of_ram") == pytest.approx(25.0) and "fits in RAM" in note
    big, note = pp.cache_metrics(facts, str(16 * 2**30))
    assert metric(big, "db_size_of_ram") == pytest.approx(200.0) and note == ""
    assert pp.cache_metrics(facts, "") == ([], "")


# -- the workload's fields ---------------------------------------------------------------

def spec_of(**fields: Any) -> pgbench.PgbenchSpec:
    doc = {"targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
           "workloads": [{"name": "pg", "tool": "pgbench", **fields}]}
    spec = parse_document(doc).workloads[0]
    assert isinstance(spec, pgbench.PgbenchSpec)
    return spec


def problems(**fields: Any) -> str:
    with pytest.raises(ExperimentError) as err:
        spec_of(**fields)
    return str(err.value)


def test_scale_as_size_or_multiple_of_ram() -> None:
    ram = hostinfo.memory_bytes()
    spec = spec_of(scale=[3, "1G", "0.5xRAM"])
    scales = list(spec.matrix["scale"])
    assert scales[0] == 3
    assert pgbench.database_bytes(scales[1] - 1) < 2**30 <= pgbench.database_bytes(scales[1])
    assert pgbench.database_bytes(scales[2]) >= ram / 2 > pgbench.database_bytes(scales[2] - 1)
    assert "scale[1]" in problems(scale=[1, "lots"])


def test_field_mistakes_are_reported_with_their_fix() -> None:
    assert "not both" in problems(duration="10s", transactions=100)
    assert "neither a builtin" in problems(script="no-such-script.sql")
    assert "keep the cluster private" in problems(settings={"port": 5432})
    assert "at least 210" in problems(clients=200, settings={"max_connections": 100})
    assert "one thread per client" in problems(clients=2, threads=4)
    assert "set by volbench" in problems(options=["-h", "/tmp"])
    assert "whole seconds" in problems(duration="1.5s")
    assert "unknown init steps" in problems(init_steps="dtxq")
    assert "unknown field" in problems(clinets=4)


def test_cases_drop_run_fields_for_init_and_threads_beyond_clients() -> None:
    spec = spec_of(mode=["run", "init"], scale=[1, 2], clients=[1, 4], threads=[1, 2])
    cases = pgbench.cases(spec)
    inits = [c for c in cases if c["mode"] == "init"]
    runs = [c for c in cases if c["mode"] == "run"]
    assert inits == [{"mode": "init", "scale": 1}, {"mode": "init", "scale": 2}]
    assert len(runs) == 2 * 3  # (1,1) (4,1) (4,2) per scale; (1,2) has more threads
    assert all(int(c["threads"]) <= int(c["clients"]) for c in runs)


def test_settings_defaults_and_max_connections_follow_clients() -> None:
    spec = spec_of(clients=[10, 150], settings={"shared_buffers": "256MB", "fsync": False})
    settings = spec.cluster.as_dict()
    assert settings == {"shared_buffers": "256MB", "fsync": "off", "max_connections": "160"}
    assert spec_of().cluster.as_dict() == {"shared_buffers": "128MB", "max_connections": "100"}
    assert spec.cluster.key != spec_of().cluster.key


def test_commands_of_a_plan() -> None:
    from volbench.targets.base import Built
    from volbench.workloads.base import RunContext

    spec = spec_of(scale=5, clients=8, threads=2, duration="30s", log_sampling=0.1,
                   query_mode="prepared", options=["--max-tries=3"])
    (params,) = pgbench.cases(spec)
    ctx = RunContext(Built("d", "directory", Path("/d")), Path("/run"),
                     {"host": "/sock", "port": "5499", "user": "postgres", "workdir": "/w"})
    inv = pgbench.command(spec, params, ctx)
    line = " ".join(inv.argv)
    assert line.startswith("pgbench -h /sock -p 5499 -U postgres -c 8 -j 2 -T 30 -P 1 -l ")
    assert "--sampling-rate=0.1" in line and "-b tpcb-like -M prepared --max-tries=3" in line
    assert inv.argv[-1] == "bench_s5" and inv.cwd == Path("/run")
    assert inv.outputs["dbsize.txt"] == Path("/w/dbsize-bench_s5.txt")
    setup = [" ".join(s.argv) for s in pgbench.setup(spec, params, ctx)]
    assert 'CREATE DATABASE "bench_s5"' in setup[0]
    assert re.search(r"^pgbench -h /sock .* -i -s 5 bench_s5$", setup[1])
    assert setup[2].endswith("-o /w/dbsize-bench_s5.txt")
    assert all(not s.throttled for s in pgbench.setup(spec, params, ctx))
    assert not inv.throttled  # the server is in the cgroup, the client need not be
    init = pgbench.command(spec, {"mode": "init", "scale": 5}, ctx)
    assert " ".join(init.argv).endswith("-i -s 5 init_s5")


def test_plan_estimates_and_working_set() -> None:
    doc = {"targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
           "workloads": [{"name": "pg", "tool": "pgbench", "scale": 20, "duration": "10s",
                          "mode": ["run", "init"]}], "repeat": 2}
    plan = make_plan(parse_document(doc))
    assert plan.estimate() > 2 * 10
    assert pgbench.working_set(plan.experiment.workloads[0],
                               {"mode": "run", "scale": 20}) == pgbench.database_bytes(20)


# -- import --------------------------------------------------------------------------------

def test_import_old_and_new_formats_match_volbench_s_own_parameters(tmp_path: Path) -> None:
    files = [PG / "9.4/run-c20-T300-scale20-standard-disk.txt",
             PG / "16.2/run-c200-t100-scale2500.txt",
             PG / "9.4/init-s1000-standard-disk-last-line.txt"]
    with Store(tmp_path / "i.db") as store:
        exp_id, n = import_files(store, "pgbench", "standard", files)
        runs = store.runs([exp_id])
    assert n == 3
    own = spec_of(scale=20, clients=20, duration="300s")
    (own_params,) = pgbench.cases(own)
    assert runs[0].params == own_params
    assert runs[1].params["transactions"] == 100 and runs[1].params["scale"] == 2500
    assert runs[2].params == {"mode": "init", "scale": 1000}
    assert metric(runs[2].metrics, "init_client_side_generate") == pytest.approx(203.96)
    assert metric(runs[0].metrics, "tps") == pytest.approx(1160.153345)


def test_import_refuses_an_error_output(tmp_path: Path) -> None:
    with Store(tmp_path / "e.db") as store, pytest.raises(ParseError, match="tps"):
        import_files(store, "pgbench", "x", [PG / "15/error-missing-database.stderr"])


def test_parse_output_combines_summary_progress_logs_and_cache_facts() -> None:
    spec = spec_of(scale=2, clients=2, threads=2, duration="2s")
    (params,) = pgbench.cases(spec)
    outputs = {"stdout": (PG / "15/run-log-l.stdout").read_text(),
               "stderr": (PG / "15/run-c4-j2-T3-P1.stderr").read_text(),
               "pgbench_txlog.14231": (PG / "15/run-log-l.thread0.log").read_text(),
               "pgbench_txlog.14231.1": (PG / "15/run-log-l.thread1.log").read_text(),
               "facts.json": json.dumps({"ram_bytes": 2**34, "shared_buffers_bytes": 2**27}),
               "dbsize.txt": "39255399\n"}
    from volbench.workloads.base import RunOutput

    parsed: Parsed = pgbench.parse_output(spec, params, RunOutput(outputs))
    assert metric(parsed.metrics, "logged_transactions") == 400
    assert sum(n for _, n in parsed.histograms[0].bins) == 400
    assert metric(parsed.metrics, "db_size") == 39255399
    (tps,) = [m for m in parsed.metrics if m.name == "tps"]
    assert "shared_buffers" in tps.note
    assert len(series(parsed.series, "tps")) == 3


# -- imports never mislead (issue 22) -------------------------------------------------------

def test_a_failed_init_imports_as_a_failed_run_with_its_message(tmp_path: Path) -> None:
    # Real pgbench 15.18 -i outputs that failed: after generating rows (figures printed), and
    # before any table existed (tests/data/pgbench/15.18/*.cmd say how each was made to fail).
    files = [PG / "15.18/error-init-primary-keys-exist.stderr",
             PG / "15.18/error-init-missing-tablespace.stderr"]
    with Store(tmp_path / "f.db") as store:
        exp_id, n = import_files(store, "pgbench", "x", files)
        runs = store.runs([exp_id])
    assert n == 2 and [str(r.status) for r in runs] == ["failed", "failed"]
    assert runs[0].error == ("pgbench -i failed: ERROR:  multiple primary keys for table "
                             "\"pgbench_branches\" are not allowed")
    assert runs[0].params == {"mode": "init", "scale": 2} and runs[0].metrics == ()
    assert 'tablespace "missing" does not exist' in runs[1].error


def test_init_failure_is_none_for_finished_inits_and_run_errors() -> None:
    for case in ("15/init-s2.stderr", "12.22/init-s2.stderr", "15/error-missing-database.stderr",
                 "15/run-c4-j2-T3-P1.stderr"):
        assert pp.init_failure((PG / case).read_text()) is None, case
    bad_step = (PG / "12.22/error-init-server-side-G.stderr").read_text()
    assert pp.init_failure(bad_step) == 'unrecognized initialization step "G"'


def test_progress_lines_alone_import_with_their_series_and_mean(tmp_path: Path) -> None:
    # stderr of a real -P 1 run without its stdout summary: 2992.7, 3297.0, 3489.3 tps.
    with Store(tmp_path / "p.db") as store:
        exp_id, _ = import_files(store, "pgbench", "x", [PG / "15/run-c4-j2-T3-P1.stderr"])
        (run,) = store.runs([exp_id], series=True)
    assert str(run.status) == "ok" and run.params == {"mode": "run"}
    tps = next(m for m in run.metrics if m.name == "tps")
    assert tps.value == pytest.approx((2992.7 + 3297.0 + 3489.3) / 3)
    assert "mean of 3 progress interval(s)" in tps.note
    lat = next(m for m in run.metrics if m.name == "latency_avg")
    weights = (2992.7, 3297.0, 3489.3)
    expect = sum(w * v for w, v in zip(weights, (1.324, 1.214, 1.144), strict=True)) / sum(weights)
    assert lat.value == pytest.approx(expect * 1e-3)
    assert [p[1] for p in next(s for s in run.parsed.series if s.name == "tps").points] == \
        list(weights)

