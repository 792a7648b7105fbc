"""A real outage in fio's per-second logs: seconds without completions have no line.

tests/data/fio/3.33/loop-stall-gap.*: a loop disk capped at 500 IOPS (cgroup blkio), then
for ~10 s at 512 B/s (one 4k read per 8 s), captured on this machine by
loop-stall-gap.capture.sh. fio wrote no line for seconds 11-17 and 19-20.
"""

from __future__ import annotations

import json

from support import DATA
from volbench.stats.changepoint import FLAT, regimes
from volbench.stats.series import stalls
from volbench.workloads import fio, fiologs

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
