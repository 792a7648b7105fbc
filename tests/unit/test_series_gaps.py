"""Real outages in per-second series: seconds without completions have no line.

tests/data/fio/3.33/loop-stall-gap.*: a loop disk capped at 500 IOPS (cgroup blkio), then
for ~10 s at 512 B/s (one 4k read per 8 s), captured on this machine by
loop-stall-gap.capture.sh. fio wrote no line for seconds 11-17 and 19-20.
tests/data/dd/coreutils-9.1/loop-stall-gap.*: dd reading a loop disk capped at 10 MiB/s,
then 1 B/s for 6 s: no progress line from 4 s to 11 s.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from support import DATA, load, make_db, make_run
from volbench.core.model import Metric, Parsed, RunResult, Series
from volbench.report import checks
from volbench.stats.changepoint import FLAT, regimes
from volbench.stats.series import fill_rate_gaps, stalls
from volbench.stats.windows import with_windows
from volbench.workloads import dd, fio, fiologs, pgbench_parse

CASE = "loop-stall-gap"
FIO = DATA / "fio" / "3.33"


def _logs() -> dict[str, str]:
    return {p.name.removeprefix(f"{CASE}."): p.read_text()
            for p in FIO.glob(f"{CASE}.fio_*.log")}


def _iops() -> list[tuple[int, float]]:
    series = {(s.name, s.tags["op"]): s for s in fio.parse_logs(_logs())}
    return list(series[("iops", "read")].points)


def test_missing_seconds_are_zero_rate_seconds() -> None:
    lines = [int(line.split(",")[0]) for line in _logs()["fio_iops.1.log"].splitlines()]
    assert round(lines[10] / 1000) - round(lines[9] / 1000) == 8  # the gap, as fio wrote it
    points = _iops()
    assert [t for t, _ in points] == list(range(1, 31))  # every second, none skipped
    assert [v for t, v in points if 11 <= t <= 17 or t in (19, 20)] == [0.0] * 9
    # the filled series holds exactly the I/Os fio counted in its JSON (±1 for the
    # unlogged last partial second and rounding of the logged rates)
    total = json.loads((FIO / f"{CASE}.json").read_text())["jobs"][0]["read"]["total_ios"]
    assert abs(sum(v for _, v in points) - total) <= 0.01 * total


def test_the_outage_is_a_stall_and_no_regime() -> None:
    points = _iops()
    times, rates = [float(t) for t, _ in points], [v for _, v in points]
    found = stalls(times, rates, fraction=0.1, min_seconds=1.0)
    longest = max(found, key=lambda s: s.duration)
    assert longest.start == 7.0 and longest.end == 21.0  # 8 s to 21 s under 10 % of 500
    gone = regimes(rates)
    assert gone.kind == FLAT and gone.stalls == ((7, 21),)  # seconds 8-21 (1-based ends)
    assert gone.sustained_level > 450  # the outage is no level
    # without the filling the outage vanished: the next line seemed to follow at once
    unfilled = [float(line.split(",")[1]) for line in _logs()["fio_iops.1.log"].splitlines()]
    assert len(unfilled) == 21 and min(unfilled) == 1.0


def test_fill_gaps_keeps_what_was_logged() -> None:
    assert fiologs.fill_gaps({3: 5.0, 6: 2.0}) == ((3, 5.0), (4, 0.0), (5, 0.0), (6, 2.0))
    assert fiologs.fill_gaps({}) == ()


def test_dd_outage_becomes_zero_rate_seconds_and_the_bytes_add_up() -> None:
    text = (DATA / "dd" / "coreutils-9.1" / f"{CASE}.stderr").read_text()
    (series,) = dd.parse_progress(text)
    points = dict(series.points)
    assert sorted(points) == [float(t) for t in range(1, 21)]
    assert all(points[t] == 0.0 for t in (6.0, 7.0, 8.0, 9.0, 10.0))  # blocked
    assert points[5.0] > 9e6 and points[12.0] > 9e6  # before and after: ~10 MB/s
    assert sum(points.values()) == 147914752  # every byte of the last progress line
    assert stalls(list(points), list(points.values()))[0].duration >= 5


def test_pgbench_periods_without_a_line_are_zero_tps() -> None:
    assert fill_rate_gaps([(1.0, 9.0), (2.0, 9.0), (5.0, 3.0), (6.0, 9.0)]) == [
        (1.0, 9.0), (2.0, 9.0), (3.0, 0.0), (4.0, 0.0), (5.0, 3.0), (6.0, 9.0)]
    # -P 5: the period is the median spacing; jitter below 1.5 periods is no gap
    assert fill_rate_gaps([(5.0, 1.0), (10.0, 1.0), (15.0, 1.0), (27.0, 1.0)])[3] == (20.0, 0.0)
    assert fill_rate_gaps([(1.0, 1.0), (2.0, 1.0), (3.4, 1.0)]) == [(1.0, 1.0), (2.0, 1.0),
                                                                    (3.4, 1.0)]


def test_pgbench_progress_series_gets_the_missing_seconds() -> None:
    lines = [f"progress: {t}.0 s, {tps} tps, lat 1.0 ms stddev 0.1, 0 failed"
             for t, tps in ((1, 100.0), (2, 100.0), (5, 10.0), (6, 100.0))]
    series = {s.name: s for s in pgbench_parse.parse_progress("\n".join(lines))}
    assert [v for _, v in series["tps"].points] == [100.0, 100.0, 0.0, 0.0, 10.0, 100.0]
    assert len(series["latency_avg"].points) == 4  # no latency for seconds without any


def test_pgbench_aggregate_log_intervals_without_transactions_are_zero_tps() -> None:
    # `start count sum_lat sum_lat2 min max`: no line for the intervals at 101-103
    text = "\n".join(f"{t} {n} {n * 1000} {n * 1000000} 900 1100"
                     for t, n in ((100, 50), (104, 10), (105, 50), (106, 50)))
    tps, latency = pgbench_parse.parse_aggregate_log(text)
    assert list(tps.points) == [(1.0, 50.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0),
                                (5.0, 10.0), (6.0, 50.0), (7.0, 50.0)]
    assert len(latency.points) == 4


def test_the_report_tells_the_outage_as_a_stall_not_a_window(tmp_path: Path) -> None:
    series = fio.parse_logs(_logs())
    whole = (Metric("iops", 250.4, "op/s", {"op": "read"}),)
    parsed = with_windows(Parsed(whole, series))
    assert parsed.metrics == whole  # no window metrics: the outage is no regime
    run = make_run("loop", {}, 1, started=0.0)
    run = RunResult(run.target, run.workload, run.params, 1, run.status, 0.0, 30.0,
                    parsed=parsed)
    rep = load(make_db(tmp_path / "g.db", [run]))
    (stall,) = [w for w in rep.warnings if w.kind == "stall" and w.metric == "iops"]
    assert "longest 14.0 s (t = 7–21 s)" in stall.message
    assert rep.time_lines == []


def test_run_stalls_finds_a_stall_anywhere_and_none_in_a_steady_or_broken_series() -> None:
    def series_run(values: list[float]) -> RunResult:
        points = tuple((float(t), v) for t, v in enumerate(values, 1))
        return make_run("t", {"iops": 1.0}, 1, started=0.0,
                        parsed_extra=Parsed(series=(Series("iops", "op/s", points),)))

    steady = [100.0, 90.0, 110.0, 95.0, 105.0, 100.0]
    for at in (0, 3, 5):  # the first, a middle and the last second
        stalled = [5.0 if i == at else v for i, v in enumerate(steady)]
        found = checks.run_stalls(series_run(stalled))
        assert [(s.stalls[0].start, s.stalls[0].end) for s in found] == [(at, at + 1)], at
    assert checks.run_stalls(series_run(steady)) == []
    assert checks.run_stalls(series_run([100.0, math.nan, 5.0, 100.0])) == []
    assert checks.run_stalls(series_run([0.0, 0.0, 0.0, 1.0])) == []  # idle: no level
