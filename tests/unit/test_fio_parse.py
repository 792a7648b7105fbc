"""fio's JSON parser on captured real outputs of fio 2.1.4, 2.17, 3.1 and 3.33."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import DATA
from volbench.core.errors import ParseError
from volbench.core.model import Metric
from volbench.workloads import fio

FIO = DATA / "fio"
RESULTS = sorted(p for p in FIO.glob("*/*.json") if not p.name.startswith("error-"))


def metric(metrics: tuple[Metric, ...], name: str, **tags: str) -> float:
    found = [m for m in metrics if m.name == name and all(m.tags.get(k) == v
                                                          for k, v in tags.items())]
    assert len(found) == 1, f"{name} {tags}: {found}"
    assert found[0].value is not None
    return found[0].value


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_capture_parses_with_unique_metric_identities(path: Path) -> None:
    parsed = fio.parse_json(path.read_text(), str(path))
    keys = [(m.name, tuple(sorted(m.tags.items()))) for m in parsed.metrics]
    assert keys and len(keys) == len(set(keys))
    assert any(m.name == "iops" and m.value for m in parsed.metrics)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bytes_moved_match_bandwidth_times_runtime(path: Path) -> None:
    """io_bytes is KiB in fio 2.x and bytes in 3.x: the units must agree with bw × runtime."""
    parsed = fio.parse_json(path.read_text(), str(path))
    checked = 0
    for m in parsed.metrics:
        if m.name != "io_bytes" or ("job" in m.tags and m.tags["job"] == "all"):
            continue
        tags = dict(m.tags)
        runtime = metric(parsed.metrics, "runtime", **tags)
        bw = metric(parsed.metrics, "bw", **tags)
        assert m.value == pytest.approx(bw * runtime, rel=0.02)
        checked += 1
    assert checked


def test_fio3_values_are_converted_to_base_units() -> None:
    path = FIO / "3.33/randread-4k-qd16.json"
    raw = json.loads(path.read_text())["jobs"][0]["read"]
    parsed = fio.parse_json(path.read_text()).metrics
    assert metric(parsed, "iops", op="read") == raw["iops"]
    assert metric(parsed, "bw", op="read") == raw["bw_bytes"]
    assert metric(parsed, "lat_mean", op="read") == pytest.approx(raw["lat_ns"]["mean"] / 1e9)
    assert metric(parsed, "clat_p99", op="read") == pytest.approx(
        raw["clat_ns"]["percentile"]["99.000000"] / 1e9)
    assert metric(parsed, "clat_p99.9", op="read") == pytest.approx(
        raw["clat_ns"]["percentile"]["99.900000"] / 1e9)
    assert not [m for m in parsed if m.name == "clat_p0"]


def test_fio2_latencies_are_microseconds() -> None:
    path = FIO / "2.17/pkb-randread-randwrite-16k-groups.json"
    raw = json.loads(path.read_text())["jobs"][0]["read"]
    parsed = fio.parse_json(path.read_text()).metrics
    job = json.loads(path.read_text())["jobs"][0]["jobname"]
    assert metric(parsed, "lat_mean", op="read", job=job) == pytest.approx(
        raw["lat"]["mean"] / 1e6)


def test_json_plus_histogram_counts_every_io() -> None:
    path = FIO / "3.33/randrw70-4k-qd16-jsonplus.json"
    parsed = fio.parse_json(path.read_text())
    ops = {h.tags["op"]: h for h in parsed.histograms if h.name == "clat"}
    assert set(ops) == {"read", "write"}
    for op, hist in ops.items():
        assert sum(c for _, c in hist.bins) == metric(parsed.metrics, "total_ios", op=op)
        assert all(0 < v < 1 for v, _ in hist.bins)  # seconds, not ns


def test_jobs_without_group_reporting_are_told_apart_and_summed() -> None:
    path = FIO / "3.33/numjobs2-no-group-reporting.json"
    parsed = fio.parse_json(path.read_text()).metrics
    jobs = sorted({m.tags["job"] for m in parsed if m.name == "iops"})
    assert jobs == ["all", "randread-nj2.0", "randread-nj2.1"]
    total = metric(parsed, "iops", job="all", op="read")
    parts = metric(parsed, "iops", job="randread-nj2.0") + metric(parsed, "iops",
                                                                   job="randread-nj2.1")
    assert total == pytest.approx(parts)


def test_stonewalled_jobs_are_not_summed() -> None:
    parsed = fio.parse_json((FIO / "3.33/two-jobs-stonewall.json").read_text()).metrics
    assert not [m for m in parsed if m.tags.get("job") == "all"]


def test_client_server_results_are_tagged_by_host_with_an_aggregate() -> None:
    parsed = fio.parse_json((FIO / "3.33/client-2servers.json").read_text()).metrics
    hosts = {m.tags["host"] for m in parsed if m.name == "iops"}
    assert hosts == {"127.0.0.1:8799", "127.0.0.1:8800", "all"}
    per_host = [m.value for m in parsed if m.name == "iops" and m.tags["host"] != "all"]
    assert metric(parsed, "iops", host="all") == pytest.approx(sum(v or 0 for v in per_host),
                                                               rel=0.01)


def test_text_before_the_json_is_skipped() -> None:
    text = "fio: some warning\n\n" + (FIO / "3.33/seqread-1m-qd4.json").read_text()
    assert metric(fio.parse_json(text).metrics, "iops", op="read") > 0


def test_a_job_error_is_a_parse_error_naming_the_error() -> None:
    path = FIO / "3.33/error-readonly-fs-output.json"
    with pytest.raises(ParseError, match="Read-only file system"):
        fio.parse_json(path.read_text(), str(path))


def test_output_without_json_names_the_source() -> None:
    path = FIO / "3.33/error-missing-directory.txt"
    with pytest.raises(ParseError, match=r"error-missing-directory\.txt"):
        fio.parse_json(path.read_text(), str(path))


def test_logs_become_per_second_series_summed_over_jobs() -> None:
    logs = {p.name.removeprefix("logs-randrw-nj2."): p.read_text()
            for p in (FIO / "3.33").glob("logs-randrw-nj2.fio_*.log")}
    series = {(s.name, s.tags["op"]): s for s in fio.parse_logs(logs)}
    assert set(series) == {("iops", "read"), ("iops", "write"), ("bw", "read"), ("bw", "write")}
    # Independent sum of the first second's read IOPS over both jobs' log files.
    first = 0.0
    for name in ("fio_iops.1.log", "fio_iops.2.log"):
        for line in logs[name].splitlines():
            t, value, ddir = (int(x) for x in line.split(",")[:3])
            if t == 1000 and ddir == 0:
                first += value
    assert dict(series[("iops", "read")].points)[1] == first
    assert series[("bw", "read")].unit == "B/s"
