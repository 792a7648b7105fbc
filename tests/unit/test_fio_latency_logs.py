"""fio's per-second latency logs (workloads/fiologs.py) on a real capture.

tests/data/fio/3.33/logs-lat-hist-2jobs.*: two rate-limited jobs in one group, 1000 IOPS
of 4k for 14 s and 2000 IOPS of 128k for the first 6 s, so the summed series bursts for
6 s; the 128k reads are slower, so the burst window's latency is higher.
"""

from __future__ import annotations

import json

import pytest

from support import DATA
from volbench.core.model import Metric, Parsed
from volbench.stats.histogram import merge_histograms, percentile_from_histogram
from volbench.stats.windows import with_windows
from volbench.workloads import fio, fiologs
from volbench.workloads.base import RunOutput

CASE = "logs-lat-hist-2jobs"
FIO = DATA / "fio" / "3.33"


def _logs() -> dict[str, str]:
    return {p.name.removeprefix(f"{CASE}."): p.read_text()
            for p in FIO.glob(f"{CASE}.fio_*.log")}


def _rows(name: str) -> list[tuple[int, int]]:
    return [(int(line.split(",")[0]), int(line.split(",")[1]))
            for line in _logs()[name].splitlines()]


def _job_json() -> list[dict[str, object]]:
    return list(json.loads((FIO / f"{CASE}.json").read_text())["jobs"])


def test_bin_values_are_fios_json_bin_keys() -> None:
    # fio's json+ output keys its clat bins by plat_idx_to_val: every key is one of ours.
    ours = {fiologs.plat_value(i) for i in range(fiologs.PLAT_NR)}
    for job in _job_json():
        keys = {float(k) for k in job["read"]["clat_ns"]["bins"]}  # type: ignore[index]
        assert keys and keys <= ours


def test_second_histograms_add_up_to_fios_whole_run_histogram() -> None:
    hists = fiologs.second_histograms(_logs())["read"]
    merged = merge_histograms(hists.values())
    whole = merge_histograms(
        {float(k): int(v) for k, v in job["read"]["clat_ns"]["bins"].items()}  # type: ignore[index]
        for job in _job_json())
    # fio writes no line for the last, unfinished second: a second's worth at most is missing.
    assert sum(whole.values()) - 3000 <= sum(merged.values()) <= sum(whole.values())
    assert all(merged[v] <= whole.get(v, 0) for v in merged)
    p99 = percentile_from_histogram(merged, 99)
    json_p99 = max(float(job["read"]["clat_ns"]["percentile"]["99.000000"])  # type: ignore[index]
                   for job in _job_json())
    assert p99 == pytest.approx(json_p99, rel=0.05)


def test_latency_series_is_the_iops_weighted_mean_over_jobs() -> None:
    series = {(s.name, s.tags["op"]): s for s in fio.parse_logs(_logs())}
    lat = dict(series[("lat", "read")].points)
    assert series[("lat", "read")].unit == "s"
    # Second 1 by hand from both jobs' lat and iops logs (ns -> s).
    (_, lat1), (_, lat2) = _rows("fio_lat.1.log")[0], _rows("fio_lat.2.log")[0]
    (_, n1), (_, n2) = _rows("fio_iops.1.log")[0], _rows("fio_iops.2.log")[0]
    assert lat[1] == pytest.approx((lat1 * n1 + lat2 * n2) / (n1 + n2) * 1e-9)
    # After the burst job ended: job 1 alone.
    assert lat[10] == pytest.approx(dict(_rows("fio_lat.1.log"))[10000] * 1e-9)


def _window(metrics: tuple[Metric, ...], name: str, window: str) -> float:
    found = [m.value for m in metrics if m.name == name and m.tags.get("window") == window
             and m.tags.get("op") == "read"]
    assert len(found) == 1, (name, window, found)
    return found[0]


def test_a_burst_gets_mean_latency_and_p99_per_window() -> None:
    outputs = {"fio.json": (FIO / f"{CASE}.json").read_text(),
               **{f"{CASE}.{k}": v for k, v in _logs().items()}}
    outputs = {k.removeprefix(f"{CASE}."): v for k, v in outputs.items()}
    spec = fio.FioSpec("two", "fio")
    parsed: Parsed = with_windows(fio.parse_output(spec, {}, RunOutput(outputs)))
    m = parsed.metrics
    assert _window(m, "iops", "burst") == pytest.approx(3001, rel=0.01)
    assert _window(m, "iops", "sustained") == pytest.approx(1001, rel=0.01)
    # Sustained: job 1 alone, its seconds 8-13 (after the straddling second) weighted by
    # its IOPS, from its own log.
    lat1 = dict(_rows("fio_lat.1.log"))
    rate1 = dict(_rows("fio_iops.1.log"))
    seconds = [t for t in rate1 if t >= 8000 - 1 and t < 14000 - 1]
    expected = sum(lat1[round(t, -3)] * rate1[t] for t in seconds) / sum(
        rate1[t] for t in seconds) * 1e-9
    assert _window(m, "lat_mean", "sustained") == pytest.approx(expected, rel=1e-6)
    # The 128k reads of the burst are slower: its window's mean latency is higher (its
    # p99 is not: the host was busier later in the capture, the sustained tail is longer).
    assert _window(m, "lat_mean", "burst") > 1.5 * _window(m, "lat_mean", "sustained")
    assert _window(m, "clat_p99", "burst") > 0 and _window(m, "clat_p99", "sustained") > 0
    # No percentile is made up from per-second means: only clat_p99 from histograms.
    assert not [x for x in m if x.name == "lat" or x.name.startswith("lat_p")]


def test_p99_per_window_is_read_from_that_windows_histograms() -> None:
    logs = _logs()
    series = fio.parse_logs(logs)
    hists = fiologs.second_histograms(logs)["read"]
    got = {m.tags["window"]: m.value for m in fiologs.window_percentiles(logs, series)}
    sustained = merge_histograms(hists[t] for t in range(8, 15) if t in hists)
    assert got["sustained"] == pytest.approx(percentile_from_histogram(sustained, 99) * 1e-9)
    burst = merge_histograms(hists[t] for t in range(1, 7))
    assert got["burst"] == pytest.approx(percentile_from_histogram(burst, 99) * 1e-9)


def test_a_flat_run_reads_no_histogram_and_gets_no_window_percentile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Job 1 alone: 1000 IOPS for 14 s, no burst. Reading its histograms would cost 7-14 ms
    # between two runs for nothing (bench/overhead.py --profile).
    logs = {k: v for k, v in _logs().items() if k.endswith(".1.log")}
    series = fio.parse_logs(logs)

    def refuse(_: object) -> None:
        raise AssertionError("histograms read for a run without windows")

    monkeypatch.setattr(fiologs, "second_histograms", refuse)
    assert fiologs.window_percentiles(logs, series) == []
    # The burst run still gets its window percentiles (the histograms are read there).
    monkeypatch.undo()
    windows = {m.tags["window"] for m in fiologs.window_percentiles(_logs(),
                                                                     fio.parse_logs(_logs()))}
    assert windows == {"burst", "sustained"}
