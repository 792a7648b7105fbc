"""fio's `sync` section as op=sync metrics (workloads/fiosync.py), on real captures of fio
3.16 and 3.33 made with fsync=1, fdatasync=1/4, O_DSYNC and O_SYNC writes
(tests/data/fio/sync.capture.sh), and the older versions that have no such section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import DATA
from volbench.core.model import Metric
from volbench.engine import importer
from volbench.workloads import fio, fiologs, fiosync

FIO = DATA / "fio"
SYNCED = sorted([*FIO.glob("*/sync-f*.json"), *FIO.glob("*/client-sync-*.json")])


def sync_metrics(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], Metric]:
    parsed = fio.parse_json(path.read_text(), str(path))
    return {(m.name, tuple(sorted(m.tags.items()))): m for m in parsed.metrics
            if m.tags.get("op") == "sync"}


def one(path: Path, name: str, **tags: str) -> Metric:
    found = [m for (n, t), m in sync_metrics(path).items()
             if n == name and dict(t) == {**tags, "op": "sync"}]
    assert len(found) == 1, (name, tags, found)
    return found[0]


def raw_job(path: Path, index: int = 0) -> dict[str, Any]:
    data = json.loads(path.read_text())
    jobs: list[dict[str, Any]] = data.get("jobs") or data["client_stats"]
    return jobs[index]


def test_fio_333_fdatasync_every_write_as_fio_measured_it() -> None:
    path = FIO / "3.33/sync-fdatasync1-jsonplus.json"
    job = raw_job(path)
    lat = job["sync"]["lat_ns"]
    assert job["sync"]["total_ios"] == 0 and lat["N"] > 1000  # fio counts fdatasyncs in N
    assert one(path, "total_ios").value == lat["N"]
    assert one(path, "iops").value == pytest.approx(lat["N"] / (job["write"]["runtime"] / 1000))
    assert one(path, "lat_mean").value == pytest.approx(lat["mean"] * 1e-9)
    assert one(path, "lat_p99").value == pytest.approx(lat["percentile"]["99.000000"] * 1e-9)
    assert one(path, "lat_p99.9").unit == "s"
    parsed = fio.parse_json(path.read_text())
    hist = next(h for h in parsed.histograms if dict(h.tags) == {"op": "sync"})
    assert hist.name == "lat" and sum(c for _, c in hist.bins) == lat["N"]
    # a psync write and its fdatasync take the whole cycle between two writes
    cycle = 1 / job["write"]["iops"]
    spent = (job["write"]["lat_ns"]["mean"] + lat["mean"]) * 1e-9
    assert spent == pytest.approx(cycle, rel=0.05)


def test_fio_316_counts_fsyncs_but_not_fdatasyncs_so_the_bins_count_them() -> None:
    fsync = FIO / "3.16/sync-fsync1-jsonplus.json"
    assert "N" not in raw_job(fsync)["sync"]["lat_ns"]  # N came with fio 3.18
    assert one(fsync, "total_ios").value == raw_job(fsync)["sync"]["total_ios"] > 0
    fdatasync = FIO / "3.16/sync-fdatasync1-jsonplus.json"
    bins = raw_job(fdatasync)["sync"]["lat_ns"]["bins"]
    assert raw_job(fdatasync)["sync"]["total_ios"] == 0
    assert one(fdatasync, "total_ios").value == sum(bins.values())
    assert one(fdatasync, "lat_mean").value == pytest.approx(
        raw_job(fdatasync)["sync"]["lat_ns"]["mean"] * 1e-9)


def test_without_a_count_the_latencies_stay_and_the_rate_is_not_made_up() -> None:
    path = FIO / "3.16/sync-fdatasync1.json"  # plain json: no N, total_ios 0, no bins
    found = {name for name, _ in sync_metrics(path)}
    assert {"lat_mean", "lat_p99", "lat_max"} <= found
    assert not {"total_ios", "iops"} & found


@pytest.mark.parametrize("path", [FIO / "3.16/sync-fdatasync1-libaio-jsonplus.json",
                                  FIO / "3.33/sync-fdatasync1-libaio-jsonplus.json"],
                         ids=lambda p: p.parent.name)
def test_libaio_sync_latencies_are_kept_as_not_measured(path: Path) -> None:
    job = raw_job(path)
    latencies = [m for (n, _), m in sync_metrics(path).items() if n.startswith("lat_")]
    assert latencies and all(m.value is None and "libaio" in m.note for m in latencies)
    assert one(path, "iops").value  # the count and the rate are right
    parsed = fio.parse_json(path.read_text())
    assert not [h for h in parsed.histograms if h.tags.get("op") == "sync"]
    # what fio printed is not a sync's time: ~0.1 µs (3.16), or more than the whole
    # write-plus-sync cycle once the write's own latency is added (3.33)
    mean, write = job["sync"]["lat_ns"]["mean"] * 1e-9, job["write"]["lat_ns"]["mean"] * 1e-9
    assert mean < 1e-6 or mean + write > 1.2 / job["write"]["iops"]
    imported = importer.read_output("fio", path.read_text(), str(path))  # stored as is
    assert any(m.name == "lat_mean" and m.value is None for m in imported.parsed.metrics)


@pytest.mark.parametrize("name", ["sync-dsync-jsonplus.json", "sync-osync-jsonplus.json"])
def test_odsync_and_osync_writes_make_no_sync_calls(name: str) -> None:
    for path in FIO.glob(f"*/{name}"):
        assert sync_metrics(path) == {}
        assert fio.parse_json(path.read_text()).metrics  # the writes are there


@pytest.mark.parametrize("path", sorted(FIO.glob("*/*.json")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_only_runs_that_synced_have_sync_metrics(path: Path) -> None:
    """fio 2.x and 3.1 write no sync section, 3.4 on one of zeros for a run without syncs."""
    if path.name.startswith("error-"):
        return
    data = json.loads(path.read_text()[path.read_text().find("{"):])
    jobs = data.get("jobs") or data.get("client_stats") or []
    synced = any((j.get("sync") or {}).get("lat_ns", {}).get("mean") for j in jobs)
    assert bool(sync_metrics(path)) == synced
    assert synced == (path in SYNCED)


def test_jobs_without_group_reporting_sum_their_syncs() -> None:
    path = FIO / "3.33/sync-fdatasync4-nj2-jsonplus.json"
    counts = [one(path, "total_ios", job=f"sync.{i}").value or 0 for i in (0, 1)]
    means = [one(path, "lat_mean", job=f"sync.{i}").value or 0 for i in (0, 1)]
    assert one(path, "total_ios", job="all").value == sum(counts)
    assert one(path, "iops", job="all").value == pytest.approx(
        sum(one(path, "iops", job=f"sync.{i}").value or 0 for i in (0, 1)))
    assert one(path, "lat_mean", job="all").value == pytest.approx(
        sum(c * m for c, m in zip(counts, means, strict=True)) / sum(counts))
    # a sync every 4 writes: a quarter of each job's writes
    for i in (0, 1):
        assert counts[i] == raw_job(path, i)["write"]["total_ios"] // 4


def test_client_server_syncs_are_tagged_by_host() -> None:
    path = FIO / "3.33/client-sync-fdatasync1-jsonplus.json"
    assert one(path, "total_ios", host="127.0.0.1").value == \
        raw_job(path)["sync"]["lat_ns"]["N"]


def test_fio_logs_no_sync_lines_so_there_is_no_sync_series() -> None:
    stem = "3.33/sync-fdatasync1-jsonplus"
    logs = {p.name.split(".", 1)[1]: p.read_text() for p in FIO.glob(f"{stem}.fio_*.log")}
    assert set(logs) == {f"fio_{k}.1.log" for k in ("iops", "bw", "lat", "clat_hist")}
    series = fiologs.parse_logs(logs)
    assert series and {s.tags["op"] for s in series} == {"write"}


def test_an_import_records_the_sync_mode_as_a_live_run_does() -> None:
    cases = {"3.33/sync-fdatasync1-jsonplus.json": "fdatasync:1",
             "3.33/sync-fsync1-jsonplus.json": "fsync:1",
             "3.33/sync-fdatasync4-nj2-jsonplus.json": "fdatasync:4",
             "3.33/sync-dsync-jsonplus.json": "dsync",
             "3.16/sync-osync-jsonplus.json": "sync",  # before 3.24 sync=1 is O_SYNC
             "3.33/randwrite-4k-qd16.json": None}
    for name, mode in cases.items():
        imported = importer.read_output("fio", (FIO / name).read_text(), name)
        assert imported.params.get("sync") == mode, name
    psync = importer.read_output("fio", (FIO / "3.33/sync-fdatasync1-jsonplus.json").read_text(),
                                 "x")
    assert psync.params["ioengine"] == fiosync.ENGINE


def test_flushes_per_sync_from_the_runs_disk_counters() -> None:
    one = fio.parse_json((FIO / "3.33/sync-fdatasync1-jsonplus.json").read_text())
    syncs = next(m.value for m in one.metrics if m.name == "total_ios"
                 and dict(m.tags) == {"op": "sync"})
    assert syncs
    found = fiosync.with_flushes(one, {"flushes": int(syncs) * 25, "write_ios": 1})
    (added,) = [m for m in found.metrics if m.name == "flushes_per_sync"]
    assert added.value == 25 and dict(added.tags) == {"op": "sync"}
    two = fio.parse_json((FIO / "3.33/sync-fdatasync4-nj2-jsonplus.json").read_text())
    (total,) = [m for m in fiosync.with_flushes(two, {"flushes": 1127}).metrics
                if m.name == "flushes_per_sync"]
    assert total.value == 1.0 and total.tags["job"] == "all"  # the whole run's count
    assert fiosync.with_flushes(one, {}) == one and fiosync.with_flushes(one, None) == one


@pytest.mark.parametrize("path", [FIO / "3.33/sync-fdatasync1-jsonplus.json",
                                  FIO / "3.33/sync-fsync1-jsonplus.json",
                                  FIO / "3.16/sync-fsync1-jsonplus.json",
                                  FIO / "3.33/client-sync-fdatasync1-jsonplus.json"],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_commit_at_qd1_is_its_write_and_its_sync(path: Path) -> None:
    """psync at QD1 does nothing but write and sync: the mean commit latency (writes per
    sync × the write's mean + the sync's mean) is the time between two commits."""
    tags = {"host": "127.0.0.1"} if "client" in path.name else {}
    commit = one(path, "commit_lat_mean", **tags).value
    rate = one(path, "iops", **tags).value
    assert commit and rate and commit == pytest.approx(1 / rate, rel=0.03)
    assert commit > (one(path, "lat_mean", **tags).value or 0)


def test_a_commit_of_several_writes_counts_them_all() -> None:
    path = FIO / "3.33/sync-fdatasync4-nj2-jsonplus.json"
    for i in (0, 1):
        job = raw_job(path, i)
        writes = job["write"]["total_ios"] / job["sync"]["lat_ns"]["N"]
        assert writes == pytest.approx(4, abs=0.01)
        assert one(path, "commit_lat_mean", job=f"sync.{i}").value == pytest.approx(
            (writes * job["write"]["lat_ns"]["mean"] + job["sync"]["lat_ns"]["mean"]) * 1e-9)
        assert one(path, "commit_lat_mean", job=f"sync.{i}").value == pytest.approx(
            1 / (one(path, "iops", job=f"sync.{i}").value or 1), rel=0.03)


def test_the_commits_p99_is_at_least_the_slower_parts() -> None:
    for path in sorted(FIO.glob("*/sync-f*.json")):
        job = raw_job(path)
        if "libaio" in path.name or "nj2" in path.name:
            continue
        sync = job["sync"]["lat_ns"]["percentile"]["99.000000"] * 1e-9
        write = job["write"]["clat_ns"]["percentile"]["99.000000"] * 1e-9
        found = one(path, "commit_lat_p99")
        assert found.value == pytest.approx(max(sync, write)) and not found.note


def test_sync_percentiles_merge_over_runs_and_reach_every_export(tmp_path: Path) -> None:
    """Three runs of the captures as one case: the merged sync histogram's samples are every
    sync of the three, and the CSV, JSON and HTML reports carry the op=sync figures."""
    import json as jsonlib

    from support import load, make_db
    from volbench import report
    from volbench.core.model import RunResult, Status
    names = ["sync-fdatasync1-jsonplus.json", "sync-fsync1-jsonplus.json",
             "sync-fdatasync1-libaio-jsonplus.json"]
    runs = [RunResult("xfs", "commit", {"rw": "randwrite", "sync": "fdatasync:1"}, i,
                      Status.OK, float(i), i + 1.0,
                      parsed=fio.parse_json((FIO / "3.33" / name).read_text()))
            for i, name in enumerate(names, 1)]
    built = load(make_db(tmp_path / "s.db", runs))
    (merged,) = [m for m in built.percentiles if m.tags.get("op") == "sync"]
    counts = [raw_job(FIO / "3.33" / n)["sync"]["lat_ns"]["N"] for n in names[:2]]
    assert merged.name == "lat" and merged.runs == 2 and merged.samples == sum(counts)
    assert merged.value(99.0) is not None and merged.value(50.0) <= merged.value(99.0)
    csv = report.render(built, "csv")
    assert "commit_lat_mean" in csv and "{\"\"op\"\":\"\"sync\"\"}" in csv
    data = jsonlib.loads(report.render(built, "json"))
    assert any(p["tags"] == {"op": "sync"} for p in data["percentiles"])
    html = report.render(built, "html")
    assert "commit — syncs" in html and "sync latency percentiles — commit" in html
