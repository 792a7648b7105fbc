"""Phases of a faulted run: rates as I/Os over the phase length, stalls, recovery, rebuild."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest

from support import DATA
from volbench.core.model import Parsed, Series
from volbench.engine.faultphases import (
    fio_offset,
    fio_runtime,
    io_errors,
    phase_metrics,
    rebuild,
    run_end,
)
from volbench.faults.md import rebuild_progress
from volbench.stats import phases
from volbench.workloads.fio import parse_json, parse_logs
from volbench.workloads.fioverify import measured_options


def secs(values: dict[int, float]) -> list[tuple[float, float]]:
    return [(float(t), v) for t, v in sorted(values.items())]


def test_split_covers_the_run_in_order() -> None:
    got = phases.split([(20.0, "fail"), (40.0, "restore"), (70.0, "late")], 60.0)
    assert got == [phases.Phase("before", 0, 20), phases.Phase("fail", 20, 40),
                   phases.Phase("restore", 40, 60)]
    assert phases.split([], 10.0) == [phases.Phase("before", 0, 10)]
    assert phases.split([(0.0, "stop")], 5.0) == [phases.Phase("stop", 0, 5)]


def test_missing_seconds_count_as_zero_and_filled_zeros_change_nothing() -> None:
    # 100 op/s, then an NFS outage with no log lines for seconds 11..20, then 100 again.
    gappy = secs({t: 100.0 for t in range(1, 31) if not 11 <= t <= 20})
    filled = secs({t: (0.0 if 11 <= t <= 20 else 100.0) for t in range(1, 31)})
    for points in (gappy, filled):
        assert phases.rate(points, 10.0, 20.0) == 0.0
        assert phases.rate(points, 0.0, 30.0) == pytest.approx(2000 / 30)
        assert phases.longest_stall(points, 0.0, 30.0) == 10.0
        # The seconds a phase starts and ends in are left out: (6, 7] .. (9, 10].
        assert phases.rate(points, 5.5, 10.5) == pytest.approx(100.0)
        assert phases.rate(points, 10.2, 10.7) == pytest.approx(0.0)


def test_stall_at_the_first_and_last_seconds_counts() -> None:
    points = secs({t: 50.0 for t in range(4, 8)})  # I/O in (3, 7] only
    assert phases.longest_stall(points, 0.0, 20.0) == 13.0
    assert phases.longest_stall(points, 0.0, 8.0) == 3.0
    assert phases.longest_stall([], 0.0, 5.0) == 5.0


def test_weighted_latency_ignores_seconds_without_io() -> None:
    lat = [(1.0, 0.001), (2.0, 0.003), (3.0, 0.5)]
    iops = [(1.0, 300.0), (2.0, 100.0), (3.0, 0.0)]
    assert phases.weighted_mean(lat, iops, 0.0, 3.0) == pytest.approx(0.0015)
    assert phases.weighted_mean(lat, iops, 2.0, 3.0) is None


def test_recovery_needs_seconds_in_a_row_back_at_the_level() -> None:
    values = {t: 100.0 for t in range(1, 11)}
    values.update({11: 0, 12: 95, 13: 40, 14: 92, 15: 99, 16: 93, 17: 100})
    points = secs(values)
    # Back at >= 90 from second (13, 14] on, for three seconds: 13 s - 10.5 s.
    assert phases.recovery(points, 100.0, 10.5, 17.0) == pytest.approx(2.5)
    assert phases.recovery(points, 100.0, 10.5, 15.0) is None


def test_recovery_error_rates_on_ar1_noise_with_a_stall() -> None:
    """Seeded simulation: AR(1) noise (phi 0.9, 5 % sd) around 500 op/s, a fault that
    halves the rate and its end at a known second; the rule finds the true recovery
    within 2 s in at least 95 % of runs and never calls a recovered run unrecovered."""
    rng = random.Random(23)
    hits = unrecovered = 0
    trials = 200
    for _ in range(trials):
        noise, values = 0.0, {}
        true_back = rng.randint(32, 38)
        for t in range(1, 61):
            noise = 0.9 * noise + rng.gauss(0, 25 * (1 - 0.9**2) ** 0.5)
            level = 250.0 if 20 < t <= true_back else 500.0
            values[t] = max(0.0, level + noise)
        values.pop(rng.randint(40, 59))  # a one-second stall somewhere after
        points = secs(values)
        before = phases.rate(points, 0.0, 20.0) or 0.0
        got = phases.recovery(points, before, 30.0, 60.0)
        if got is None:
            unrecovered += 1
        elif abs((30.0 + got) - (true_back)) <= 2.0:
            hits += 1
    assert unrecovered == 0
    assert hits / trials >= 0.95


def test_phase_metrics_from_series_and_events() -> None:
    iops = Series("iops", "op/s", tuple(secs({t: (500.0 if t <= 20 else 250.0)
                                             for t in range(1, 41)})), {"op": "read"})
    lat = Series("lat", "s", tuple(secs({t: (0.032 if t <= 20 else 0.064)
                                        for t in range(1, 41)})), {"op": "read"})
    events = [{"done_s": 20.0, "phase": "fail", "action": "fail", "error": None},
              {"done_s": 30.0, "phase": "restore", "action": "restore", "fault": "fail",
               "error": None}]
    parsed = phase_metrics(Parsed(series=(iops, lat)), events, 40.3, {})
    got = {(m.name, m.tags.get("phase"), m.tags.get("after")): m.value for m in parsed.metrics}
    assert got[("iops", "before", None)] == 500.0
    assert got[("iops", "fail", None)] == 250.0
    assert got[("lat_mean", "fail", None)] == pytest.approx(0.064)
    assert got[("phase_seconds", "restore", None)] == 10.0
    assert got[("stall_seconds", None, None)] == 0.0
    # The rate never came back to 90 % of before: not recovered, and said so.
    assert got[("recovery_seconds", None, "fail")] is None
    note = next(m.note for m in parsed.metrics if m.name == "recovery_seconds")
    assert note == "not recovered by the end of the run"


def test_ios_that_moved_no_bytes_are_not_the_disks_iops() -> None:
    # A pulled lab disk reads as empty: 15 000 "IOPS" a second at 0 B/s (lab: 13-21 k).
    # A real slow second at 512 B (3 IOPS, fio's KiB/s log rounds it to 0) stays.
    pulled = range(11, 21)
    iops = Series("iops", "op/s", tuple(secs({t: 15000.0 if t in pulled else
                                             3.0 if t == 25 else 100.0 for t in range(1, 31)})),
                  {"op": "read"})
    # fio's bw log has no line for a second without bytes: seconds 11-20 are missing.
    bw = Series("bw", "B/s", tuple(secs({t: 0.0 if t == 25 else 409600.0
                                         for t in range(1, 31) if t not in pulled})),
                {"op": "read"})
    events = [{"done_s": 10.0, "phase": "pull", "action": "pull", "error": None},
              {"done_s": 20.0, "phase": "after", "action": "return", "fault": "pull",
               "error": None}]
    parsed = phase_metrics(Parsed(series=(iops, bw)), events, 30.2, {})
    got = {(m.name, m.tags.get("phase")): m.value for m in parsed.metrics}
    assert got[("iops", "pull")] == 0.0 and got[("iops", "before")] == 100.0
    assert got[("stall_seconds", "pull")] == 10.0
    assert got[("empty_ios", None)] == 150000.0
    assert got[("iops", "after")] == pytest.approx((9 * 100.0 + 3.0) / 10)
    # Without a bw series nothing can be told: the IOPS stay as fio logged them.
    alone = phase_metrics(Parsed(series=(iops,)), events, 30.2, {})
    assert {m.name: m.value for m in alone.metrics if m.tags.get("phase") == "pull"
            }["iops"] == 15000.0


def test_a_failed_action_opens_no_phase() -> None:
    iops = Series("iops", "op/s", tuple(secs({t: 100.0 for t in range(1, 11)})), {"op": "write"})
    events = [{"done_s": 5.0, "phase": "stop", "error": "rpc.nfsd 0 failed"}]
    parsed = phase_metrics(Parsed(series=(iops,)), events, 10.0, {})
    assert {m.tags.get("phase") for m in parsed.metrics} == {"before", None}


def test_run_end_keeps_a_trailing_stall() -> None:
    s = Series("iops", "op/s", tuple(secs({t: 1.0 for t in range(1, 11)})))
    assert run_end([s], 10.4) == 10.0
    assert run_end([s], 30.2) == 30.0


def test_fios_own_runtime_ends_the_run_not_its_exit() -> None:
    # A loaded lab guest: fio's 21 s job ended at 21.0 s of its clock, the process 4.5 s
    # later; before, those 4.5 s were a 4 s "stall" in the last phase.
    iops = Series("iops", "op/s", tuple(secs({t: 200.0 for t in range(1, 22)})), {"op": "read"})
    out = {"fio.json": json.dumps({"jobs": [{"job_runtime": 21000}, {"job_runtime": 20500}]})}
    assert fio_runtime(out) == 21.0 and fio_runtime({}) is None
    events = [{"done_s": 12.0, "phase": "slow", "error": None}]
    got = {(m.name, m.tags.get("phase")): m.value for m in
           phase_metrics(Parsed(series=(iops,)), events, 25.5, out).metrics}
    assert got[("stall_seconds", "slow")] == 0.0
    assert got[("iops", "slow")] == pytest.approx(200.0)
    # fio logs no entry for its last part-second: 20 entries for a 21.2 s job (lab).
    short = Series("iops", "op/s", tuple(secs({t: 100.0 for t in range(1, 21)})), {"op": "read"})
    assert run_end([short], 26.0, 21.157) == 20.0
    # An NFS outage to the end: fio's runtime runs on while I/O hangs, the stall is kept.
    hung = Series("iops", "op/s", tuple(secs({t: 100.0 for t in range(1, 9)})), {"op": "write"})
    out = {"fio.json": json.dumps({"jobs": [{"job_runtime": 60000}]})}
    got = {(m.name, m.tags.get("phase")): m.value for m in
           phase_metrics(Parsed(series=(hung,)), [], 61.0, out).metrics}
    assert got[("stall_seconds", None)] == 52.0


MDSTAT = """Personalities : [raid1]
md127 : active raid1 vdc[2] vdb[0]
      1046528 blocks super 1.2 [2/1] [U_]
      [====>................]  recovery = 21.9% (229760/1046528) finish=0.6min speed=20886K/sec

unused devices: <none>
"""


def test_rebuild_progress_from_mdstat() -> None:
    assert rebuild_progress(MDSTAT, "md127") == {
        "what": "recovery", "fraction": pytest.approx(229760 / 1046528), "done_kib": 229760,
        "total_kib": 1046528, "speed_kib_s": 20886}
    assert rebuild_progress(MDSTAT, "md126") is None


def test_rebuild_seconds_measured_or_projected() -> None:
    events = [{"done_s": 10.0, "action": "restore", "error": None}]
    running = {"rebuild": {"fraction": 0.25}}
    samples = [{"t": 11.0, **running}, {"t": 20.0, **running}, {"t": 31.0, "rebuild": None}]
    got = {m.name: m.value for m in rebuild(events, samples)}
    assert got == {"rebuild_progress": 1.0, "rebuild_seconds": 21.0}
    projected = rebuild(events, samples[:2])
    assert [(m.name, m.value) for m in projected] == [("rebuild_progress", 0.25),
                                                       ("rebuild_seconds", 40.0)]
    assert projected[1].note.startswith("projected")
    barely = [{"t": 11.0, "rebuild": {"fraction": 0.0001}}]
    assert [(m.name, m.value) for m in rebuild(events, barely)] == [
        ("rebuild_progress", 0.0001), ("rebuild_seconds", None)]


def test_event_times_move_onto_fios_clock() -> None:
    """fio 3.33 stamped its JSON at 1795613289312 ms after 14029 ms of I/O; the process
    had started at 1795613274.43935: fio's time zero is 0.844 s later (measured on a
    throttled loop disk, where a slow fault at 4.0 s showed in fio's second (3, 4])."""
    doc = '{"timestamp_ms": 1795613289312, "jobs": [{"job_runtime": 14029}]}'
    offset = fio_offset({"fio.json": doc}, 1795613274.43935)
    assert offset == pytest.approx(0.844, abs=0.001)
    assert fio_offset({"fio.json": "not json"}, 0.0) == 0.0
    assert fio_offset({}, 0.0) == 0.0
    iops = Series("iops", "op/s", tuple(secs({t: (100.0 if 4 <= t <= 7 else 500.0)
                                             for t in range(1, 14)})), {"op": "read"})
    events = [{"done_s": 3.844, "phase": "slow", "error": None},
              {"done_s": 7.844, "phase": "after", "error": None, "fault": "slow"}]
    got = {(m.name, m.tags.get("phase")): m.value
           for m in phase_metrics(Parsed(series=(iops,)), events, 14.0, {}, (), offset).metrics}
    assert got[("iops", "slow")] == pytest.approx(100.0, rel=0.01)
    assert got[("iops", "before")] == pytest.approx(500.0, rel=0.01)


def test_a_slow_fault_on_a_throttled_loop_disk_measured_on_whole_seconds() -> None:
    """fio's per-second IOPS of a real run (loop disk capped at 500 read IOPS, cut to 20 %
    at 4 s for 4 s; fio's clock 0.703 s behind the process's): the seconds the fault
    starts and ends in (259, 380) mix both levels and are left out of both phases."""
    real = [500.0, 500, 500, 259, 110, 100, 99, 380, 500, 500, 500, 495, 500, 500]
    iops = Series("iops", "op/s", tuple((float(t), v) for t, v in enumerate(real, 1)),
                  {"op": "read"})
    events = [{"done_s": 4.012, "phase": "slow", "error": None},
              {"done_s": 8.001, "phase": "after", "error": None, "fault": "slow"}]
    got = {(m.name, m.tags.get("phase")): m.value for m in
           phase_metrics(Parsed(series=(iops,)), events, 15.0, {}, (), 0.703).metrics}
    assert got[("iops", "before")] == 500.0
    assert got[("iops", "slow")] == pytest.approx(103.0)  # ground truth 100
    assert got[("iops", "after")] == pytest.approx(499.2, abs=0.1)
    assert got[("recovery_seconds", None)] == pytest.approx(8.0 - 7.298, abs=0.01)


def test_io_errors_from_fios_json() -> None:
    real = (Path(__file__).parents[1] / "data" / "fio" / "3.33" / "client-1server.json")
    assert [m.value for m in io_errors({"fio.json": real.read_text()})] == [0.0]
    counted = '{"jobs": [{"error": 5, "total_err": 17}, {"error": 0, "total_err": 3}]}'
    assert [m.value for m in io_errors({"fio.json": counted})] == [20.0]
    stopped = '{"jobs": [{"error": 5}, {"error": 0}]}'
    assert [m.value for m in io_errors({"fio.json": stopped})] == [1.0]
    assert io_errors({}) == []
    # The note names the first error (fio's first_error): ENOSPC from a full thin pool.
    real = (Path(__file__).parents[1] / "data" / "fio" / "3.33" / "verify-damaged.json")
    (errors,) = io_errors({"fio.json": real.read_text()})
    assert errors.note == f"first error: errno 84 ({os.strerror(84)})"
    nospace = '{"jobs": [{"error": 0, "total_err": 9, "first_error": 28}]}'
    assert io_errors({"fio.json": nospace})[0].note == (
        "first error: errno 28 (No space left on device)")


def test_io_errors_say_when_fio_ended_the_run_after_a_pass_of_failed_writes() -> None:
    data = Path(__file__).parents[1] / "data" / "fio" / "3.33"
    # Every write failed (ENOSPC); with the verify headers of a faulted run fio stopped
    # after one pass over the 4M file (1024 writes), exit code 0, instead of running 5 s.
    (early,) = io_errors({"fio.json": (data / "error-pass-verify.json").read_text()})
    assert early.value == 1024.0
    assert early.note == ("first error: errno 28 (No space left on device); fio ended the "
                          "job after 0.0 s of 5 s: no write of a whole pass over the file "
                          "(4M) succeeded, and with verify headers fio stops such a job")
    # With volbench's measured options (no random map, io_size far beyond) and without
    # verify, the same failing writes ran the whole 5 s: no such note.
    onepass = data / "error-pass-onepass"
    assert " ".join(measured_options({"rw": "randwrite"})) in onepass.with_suffix(
        ".cmd").read_text()
    (whole,) = io_errors({"fio.json": onepass.with_suffix(".json").read_text()})
    assert whole.value > 100_000 and whole.note == "first error: errno 28 (No space left on device)"
    (whole,) = io_errors({"fio.json": (data / "error-pass-noverify.json").read_text()})
    assert whole.value > 100_000 and whole.note == "first error: errno 28 (No space left on device)"


def test_a_pulled_loop_disks_empty_reads_leave_every_figure() -> None:
    """A real run (tests/data/fio/3.33/loop-pull): 500 IOPS, the disk pulled at 4 s for
    4 s. fio's JSON says 438 537 IOPS at a p99 of 12 us: 4.35 million reads returned no
    bytes, 1.36 million of them in the second the disk came back in beside 50 real ones."""
    folder = DATA / "fio" / "3.33" / "loop-pull"
    outputs = {p.name: p.read_text() for p in folder.iterdir()
               if p.name.startswith("fio") and p.suffix in (".json", ".log")}
    faults = json.loads((folder / "events.json").read_text())
    parsed = parse_json(outputs["fio.json"], "fio.json")
    parsed = replace(parsed, series=parse_logs(
        {k: v for k, v in outputs.items() if k.endswith(".log")}))
    fio_said = {m.name: m.value for m in parsed.metrics if m.tags == {"op": "read"}}
    assert fio_said["iops"] > 400_000 and fio_said["clat_p99"] < 1e-4
    got = phase_metrics(parsed, faults["events"], 13.5, outputs, (), faults["tool_offset_s"])
    whole = {m.name: m for m in got.metrics if m.tags == {"op": "read"}}
    # 9 seconds at 500 and the return second's ~50 over fio's 13 s: about 350.
    assert whole["iops"].value == pytest.approx(9 * 500 / 13, rel=0.05)
    assert "left out" in whole["iops"].note
    # The disk's reads waited ~32 ms (16 queued at 500 a second), its p99 ~100 ms.
    assert 0.02 < whole["clat_p99"].value < 0.2  # type: ignore[operator]
    assert 0.01 < whole["clat_mean"].value < 0.1  # type: ignore[operator]
    assert whole["clat_min"].value is None and "withheld" in whole["clat_min"].note
    phase = {(m.name, m.tags.get("phase")): m.value for m in got.metrics}
    assert phase[("iops", "pull")] == 0.0
    assert phase[("iops", "before")] == pytest.approx(500, rel=0.02)
    assert phase[("iops", "after")] == pytest.approx(500, rel=0.02)
    assert phase[("clat_p99", "before")] == pytest.approx(0.1, rel=0.2)
    assert ("clat_p99", "pull") not in phase  # no real read in the phase
    assert phase[("empty_ios", None)] > 4_000_000
