"""A faulted run's metrics per phase, from its per-second series and the fault events.

Tagged `phase=<name>` (before, each action's name while in effect, restore, after):
iops / bw as completions in the phase over its length, lat_mean weighted by the same
seconds' I/Os, clat_p99 from the seconds' histograms added up; `stall_seconds` (whole
run and per phase), `recovery_seconds` after each fault's end (None: not recovered),
`rebuild_progress` / `rebuild_seconds` from the md samples. The arithmetic is
stats.phases; this module only picks the series and names the metrics.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from volbench.core import units
from volbench.core.model import Metric, Parsed, Series
from volbench.stats import phases
from volbench.stats.histogram import merge_histograms, percentile_from_histogram
from volbench.workloads.fiologs import second_histograms

RATES = ("iops", "bw", "tps")
# The rate whose seconds say whether the workload moved (stalls, recovery): fio's I/Os,
# pgbench's transactions, dd's bytes (the first a run has).
PRIMARY = ("iops", "tps", "bw")
# A latency series and the rate that weighs its seconds (fio's lat by I/Os, pgbench's
# per-second average latency by transactions).
LATENCIES = {"lat": "iops", "latency_avg": "tps"}
# fio's last logged second ends within about a second of the process; a longer quiet
# tail is a stall at the end of the run (a disk that never came back) and counts.
TAIL_SLACK_S = 2.0
# A rebuild less far along than this says too little to project its length.
MIN_PROJECTED = 0.02
# Completions in a second beyond what its bytes account for, at or above this and at
# least half the second's, are empty I/Os (without_empty), not the disk's.
EMPTY_MIN_IOPS = 10.0
EMPTY_MIN_SHARE = 0.5
# A start later than this is not fio's start-up (a clock step, a confused output).
MAX_OFFSET_S = 30.0


def io_errors(outputs: Mapping[str, str]) -> list[Metric]:
    """`io_errors`: fio's error count (`total_err`, with continue_on_error) summed over
    jobs, else the jobs that stopped on an error; nothing when there is no fio JSON."""
    try:
        jobs = json.loads(outputs.get("fio.json", "")).get("jobs", [])
        count = sum(int(j["total_err"]) if "total_err" in j else int(j.get("error", 0) != 0)
                    for j in jobs)
        first = next((int(j["first_error"]) for j in jobs if j.get("first_error")), 0)
        short = next((e for e in map(_ended_early, jobs) if e), "") if count else ""
    except (ValueError, TypeError, AttributeError, KeyError):
        return []
    # Which error it was: ENOSPC from a full thin pool, EIO from a failing disk.
    note = f"first error: errno {first} ({os.strerror(first)})" if count and first else ""
    return [Metric("io_errors", float(count), "", note="; ".join(n for n in (note, short) if n))]


def _ended_early(job: Mapping[str, Any]) -> str:
    """Why a time_based job with errors ran shorter than asked, '' when it did not.
    fio 3.33's do_io() returns after each `size` bytes issued when verify is set (a
    faulted write run's crc32c headers) and ends the job, exit code 0, when none of them
    completed: errors that last a whole pass over the file end the run there
    (tests/data/fio/3.33/error-pass.capture.sh: 1024 failed writes, 10-17 ms of 5 s)."""
    options = job.get("job options", {})
    if options.get("time_based") not in ("1", "") or "runtime" not in options:
        return ""
    asked = units.parse_duration(options["runtime"])
    ran = float(job.get("job_runtime", 0)) / 1000
    if ran >= asked - TAIL_SLACK_S:
        return ""
    return (f"fio ended the job after {ran:.1f} s of {asked:g} s: no write of a whole pass "
            f"over the file ({options.get('size', 'size')}) succeeded, and with verify "
            "headers fio stops such a job")


def run_end(series: Sequence[Series], elapsed: float, measured: float | None = None) -> float:
    """Where the measured time ends, in the series' seconds: fio's own job runtime when
    it says (`measured`: it runs on while I/O hangs, and it leaves out the process's
    exit, which took 4.5 s in a loaded lab guest and read as a 4 s stall), else the
    process's end. A quiet tail of up to TAIL_SLACK_S after the last logged second is
    fio's logging (its last part-second gets no entry: 20 entries for a 21.2 s job);
    a longer one is a stall at the end of the run (a disk that never came back)."""
    end = measured if measured is not None and measured > 0 else elapsed
    last = max((t for s in series for t, _ in s.points), default=0.0)
    return float(int(end)) if end - last > TAIL_SLACK_S else max(last, 1.0)


def fio_runtime(outputs: Mapping[str, str]) -> float | None:
    """fio's measured seconds (the longest job_runtime), None without fio's JSON."""
    try:
        jobs = json.loads(outputs.get("fio.json", "")).get("jobs", [])
        runtime = max(float(j["job_runtime"]) for j in jobs) / 1000.0
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return runtime if runtime > 0 else None


def fio_offset(outputs: Mapping[str, str], started: float) -> float:
    """Seconds from the process start to fio's time zero (its logs' clock): fio stamps
    its JSON when the jobs end (timestamp_ms), after job_runtime ms of I/O. 0 when the
    output does not say (another tool, or an older fio)."""
    try:
        doc = json.loads(outputs.get("fio.json", ""))
        runtime = max(float(j.get("job_runtime", 0)) for j in doc.get("jobs", []))
        offset = (float(doc["timestamp_ms"]) - runtime) / 1000.0 - started
    except (ValueError, KeyError, TypeError, AttributeError):
        return 0.0
    return offset if 0.0 <= offset < MAX_OFFSET_S else 0.0


def without_empty(series: Sequence[Series]
                  ) -> tuple[list[Series], dict[str, float], set[tuple[str, int]]]:
    """The series with I/Os that moved no bytes taken out of each second, how many such
    I/Os there were per op, and the seconds that had them as (op, whole second) (their
    latency histograms are mostly the empty I/Os': clat_p99 leaves them out).

    A lab disk pulled out of the guest has capacity 0 (and so has a host loop disk
    pulled, faults/loopdisk.py): every read then returns 0 bytes at once, without an
    error, and fio counts each as done (13 000-21 000 "IOPS" at 0 B/s in the lab, 1.4
    million on the host). A second's real I/Os are its bytes over the op's bytes per
    I/O (the median bw/iops of the seconds that moved bytes); the rest, when
    they are at least EMPTY_MIN_IOPS and half the second's completions, are empty I/Os
    (a second with a real 3 IOPS at 512 B that fio's KiB/s log rounds to 0 stays). The
    second a disk returns in had 50 real reads beside 1.36 million empty ones.
    fio's bandwidth log has no line for a second without bytes (seen in the lab: its
    series ends at the pull while the IOPS go on), so a second missing from an op's bw
    series moved no bytes; an op without a bw series is left as it is."""
    bw = {(s.tags.get("op", ""), t): v for s in series if s.name == "bw" for t, v in s.points}
    with_bw = {s.tags.get("op", "") for s in series if s.name == "bw"}
    per_io: dict[str, float] = {}
    for s in series:
        op = s.tags.get("op", "")
        if s.name == "iops" and op in with_bw:
            ratios = [bw[(op, t)] / v for t, v in s.points if v > 0 and bw.get((op, t))]
            per_io[op] = statistics.median(ratios) if ratios else 0.0
    out: list[Series] = []
    empty: dict[str, float] = {}
    blank: set[tuple[str, int]] = set()
    for s in series:
        op = s.tags.get("op", "")
        if s.name != "iops" or op not in with_bw:
            out.append(s)
            continue
        points = []
        for t, v in s.points:
            real = bw.get((op, t), 0.0) / per_io[op] if per_io[op] else 0.0
            extra = v - real
            if extra >= max(EMPTY_MIN_IOPS, EMPTY_MIN_SHARE * v):
                empty[op] = empty.get(op, 0.0) + extra
                blank.add((op, round(t)))
                v = real
            points.append((t, v))
        out.append(replace(s, points=tuple(points)))
    return out, empty, blank


def without_empty_ios(metrics: Sequence[Metric], empty: Mapping[str, float],
                      real: Mapping[str, float], runtime: float,
                      kept: Mapping[str, Mapping[float, int]]) -> tuple[Metric, ...]:
    """fio's whole-run figures of each op with `empty` I/Os (that returned no bytes: a
    pulled disk's reads) taken out. A 500-IOPS loop disk pulled for 4 s of 13 "did"
    438 537 IOPS at a p99 of 12 us by fio's JSON: IOPS become the `real` I/Os (the
    seconds' without the empty ones: fio's count less theirs would be less exact, its
    per-second log adding up to 0.2 % more than its total) over the runtime; latency
    percentiles and the mean are read again from the seconds' histograms without the
    empty seconds (`kept`); the other latency figures, which fio computed with the empty
    I/Os in and nothing can take them out of, are withheld with a note."""
    out = []
    for m in metrics:
        op = m.tags.get("op", "")
        if op not in empty or set(m.tags) != {"op"} or m.value is None:
            out.append(m)
        elif m.name == "iops" and runtime > 0:
            out.append(replace(m, value=real.get(op, 0.0) / runtime,
                               note=f"fio said {m.value:.0f}; {empty[op]:.0f} I/Os that "
                                    "returned no bytes are left out"))
        elif m.name.startswith(LATENCY_FIGURES):
            out.append(_latency_kept(m, kept.get(op) or {}, empty[op]))
        else:
            out.append(m)
    return tuple(out)


# fio's whole-run latency figures (clat_p99, lat_mean, slat_max, …).
LATENCY_FIGURES = ("clat_", "lat_", "slat_")


def _latency_kept(metric: Metric, kept: Mapping[float, int], empty: float) -> Metric:
    count = sum(kept.values())
    note = "from fio's per-second histograms without the seconds of empty I/Os"
    if metric.name.startswith("clat_p") and count:
        p = float(metric.name.removeprefix("clat_p"))
        return replace(metric, value=percentile_from_histogram(kept, p) * 1e-9, note=note)
    if metric.name == "clat_mean" and count:
        return replace(metric, value=sum(v * c for v, c in kept.items()) / count * 1e-9,
                       note=note)
    return replace(metric, value=None, note=f"withheld: fio's figure mixes in {empty:.0f} "
                   "I/Os that returned no bytes (a pulled disk)")


def _kept_histograms(hists: Mapping[str, Mapping[float, Mapping[float, int]]],
                     blank: AbstractSet[tuple[str, int]]) -> dict[str, dict[float, int]]:
    """Each op's clat histogram over the run without the `blank` seconds."""
    return {op: merge_histograms(h for t, h in by_second.items() if (op, round(t)) not in blank)
            for op, by_second in hists.items()}


def primary(series: Sequence[Series]) -> str | None:
    """The rate a run's stalls and recovery are read from, None when it has none."""
    return next((name for name in PRIMARY if any(s.name == name for s in series)), None)


def _all_ops(series: Sequence[Series]) -> list[tuple[float, float]]:
    """The primary rate each second, all ops (read, write) together."""
    name = primary(series)
    total: dict[float, float] = {}
    for s in series:
        if s.name == name:
            for t, v in s.points:
                total[t] = total.get(t, 0.0) + v
    return sorted(total.items())


def phase_metrics(parsed: Parsed, events: Sequence[Mapping[str, Any]], elapsed: float,
                  logs: Mapping[str, str], samples: Sequence[Mapping[str, Any]] = (),
                  offset: float = 0.0) -> Parsed:
    """`parsed` with the phase metrics added (unchanged when it has no series). Event
    times are from the process start, the series' from the tool's: `offset` apart."""
    series = [s for s in parsed.series if s.name in (*RATES, *LATENCIES)]
    if primary(series) is None:  # a tool without a per-second series (or fio's logs)
        return replace(parsed, metrics=parsed.metrics + tuple(rebuild(events, samples)))
    end = run_end(series, elapsed - offset, fio_runtime(logs))
    split = phases.split(phases.cuts(events, offset), end)
    series, empty, blank = without_empty(series)
    hists = second_histograms(logs)  # parsed once: both the whole run and the phases read it
    out: list[Metric] = []
    if empty:
        out.append(Metric("empty_ios", sum(empty.values()), "op", {}, "I/Os that returned "
                          "no bytes (a pulled disk reads as empty): not counted in IOPS"))
        real = {s.tags.get("op", ""): sum(v for _, v in s.points)
                for s in series if s.name == "iops"}
        parsed = replace(parsed, metrics=without_empty_ios(
            parsed.metrics, empty, real, fio_runtime(logs) or end,
            _kept_histograms(hists, blank)))
    for phase in split:
        out += _rates(series, phase)
        out.append(Metric("phase_seconds", phase.length, "s", {"phase": phase.name}))
        out.append(Metric("stall_seconds", phases.longest_stall(
            _all_ops(series), phase.start, phase.end), "s", {"phase": phase.name}))
    out += _p99(hists, split, blank)
    out.append(Metric("stall_seconds", phases.longest_stall(_all_ops(series), 0.0, end), "s"))
    out += _recoveries(series, split, events, end, offset)
    out += rebuild(events, samples)
    out += workload_shares(out, events)
    out += io_errors(logs)
    return replace(parsed, metrics=parsed.metrics + tuple(out))


def _rates(series: Sequence[Series], phase: phases.Phase) -> list[Metric]:
    out = []
    for s in series:
        tags = {**s.tags, "phase": phase.name}
        if s.name in RATES:
            value = phases.rate(s.points, phase.start, phase.end)
            out.append(Metric(s.name, value, s.unit, tags))
        elif s.name in LATENCIES:
            weigh = next((w for w in series if w.name == LATENCIES[s.name]
                          and w.tags.get("op", "") == s.tags.get("op", "")), None)
            if weigh is None:
                continue
            value = phases.weighted_mean(s.points, weigh.points, phase.start, phase.end)
            out.append(Metric("lat_mean", value, "s", tags,
                              "" if value is not None else "nothing completed"))
    return out


def _p99(hists: Mapping[str, Mapping[float, Mapping[float, int]]],
         split: Sequence[phases.Phase], blank: AbstractSet[tuple[str, int]] = frozenset()
         ) -> list[Metric]:
    """clat_p99 per op and phase from the seconds' histograms, but the `blank` seconds'
    (empty reads of a pulled disk: a few microseconds each, not the disk's latency)."""
    out = []
    for op, by_second in hists.items():
        for phase in split:
            start, end = phases.whole_seconds(phase.start, phase.end)
            merged = merge_histograms(h for t, h in by_second.items()
                                      if start <= t - 0.5 < end and (op, round(t)) not in blank)
            if sum(merged.values()):
                out.append(Metric("clat_p99", percentile_from_histogram(merged, 99.0) * 1e-9,
                                  "s", {"op": op, "phase": phase.name}))
    return out


def _recoveries(series: Sequence[Series], split: Sequence[phases.Phase],
                events: Sequence[Mapping[str, Any]], end: float, offset: float
                ) -> list[Metric]:
    before = next((p for p in split if p.name == "before"), None)
    if before is None:
        return []
    out = []
    for event in events:
        if event.get("error") or event.get("phase") not in ("after", "restore"):
            continue
        since = float(event["done_s"]) - offset
        for s in series:
            if s.name != primary(series):
                continue
            level = phases.rate(s.points, before.start, before.end) or 0.0
            took = phases.recovery(s.points, level, since, end)
            out.append(Metric("recovery_seconds", took, "s",
                              {**s.tags, "after": str(event.get("fault", ""))},
                              "" if took is not None else "not recovered by the end of the run"))
    return out


def rebuild(events: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]]
            ) -> list[Metric]:
    """The rebuild after `restore`: its progress, its length (measured or projected),
    the length expected from the member's size and limits, and its rate and share of the
    members' byte cap (from /proc/mdstat's progress)."""
    restored = [e for e in events if e.get("action") == "restore" and not e.get("error")]
    seen = [s for s in samples if "rebuild" in s and restored
            and s["t"] >= float(restored[-1]["done_s"])]
    if not restored or not seen:
        return []
    running = [s for s in seen if s["rebuild"] is not None]
    facts = _fail_facts(events)
    return (_rebuild_length(restored[-1], seen, running)
            + _rebuild_expected(facts, running) + _rebuild_rate(facts, running))


def _done_bytes(running: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """(time, bytes rebuilt) of the samples that say how far the rebuild was."""
    return [(float(s["t"]), float(s["rebuild"]["done_kib"]) * 1024) for s in running
            if "done_kib" in s["rebuild"]]


def _rebuild_length(restore: Mapping[str, Any], seen: Sequence[Mapping[str, Any]],
                    running: Sequence[Mapping[str, Any]]) -> list[Metric]:
    """rebuild_seconds measured when it ended in the run: from its start to its end as
    mdstat's progress puts them (samples come once a second: the first one without a
    rebuild is up to a second late), within `mdadm --add` starting and that sample;
    else projected from the progress."""
    start = float(restore["done_s"])
    finished = next((s for s in seen if s["rebuild"] is None and running
                     and s["t"] > running[0]["t"]), None)
    if finished is not None:
        total = float(running[-1]["rebuild"].get("total_kib") or 0) * 1024
        span = phases.progress_span(_done_bytes(running), total,
                                    float(restore.get("started_s", start)), float(finished["t"]))
        return [Metric("rebuild_progress", 1.0, ""), Metric(
            "rebuild_seconds", span if span is not None else float(finished["t"]) - start, "s")]
    if not running:
        return []
    last = running[-1]
    fraction = float(last["rebuild"]["fraction"])
    if fraction < MIN_PROJECTED:  # a bench run projected 5.9 million s from ~0 %
        return [Metric("rebuild_progress", fraction, ""),
                Metric("rebuild_seconds", None, "s", note=f"not projected: the rebuild was "
                       f"at {100 * fraction:.2f} % when the run ended")]
    projected = (float(last["t"]) - start) / fraction
    return [Metric("rebuild_progress", fraction, ""),
            Metric("rebuild_seconds", projected, "s", note="projected from the progress at "
                   "the end of the run")]


def _fail_facts(events: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The facts of the last member `fail` that took effect (md's limits, the member's
    size, its bitmap, the disks' byte cap)."""
    failed = [e for e in events if e.get("action") == "fail" and not e.get("error")]
    return dict(failed[-1].get("facts") or {}) if failed else {}


def _speed_max_bps(facts: Mapping[str, Any]) -> float | None:
    """md's speed_limit_max during the rebuild (KiB/s, as set by the fault or md's own)
    in B/s."""
    kib = (facts.get("set") or {}).get("speed_limit_max") or \
        (facts.get("speed_limits") or {}).get("speed_limit_max")
    return float(kib) * 1024 if kib else None


def _rebuild_expected(facts: Mapping[str, Any], running: Sequence[Mapping[str, Any]]
                      ) -> list[Metric]:
    """rebuild_expected_seconds: the member's size (md's progress total, else sysfs's
    component_size) over min(the disks' byte cap, speed_limit_max)."""
    kib = running[0]["rebuild"].get("total_kib") if running else facts.get("member_kib")
    if not kib or not facts:
        return []
    bitmap = str(facts.get("bitmap", "none"))
    if bitmap != "none":
        return [Metric("rebuild_expected_seconds", None, "s", note=f"not predicted: the "
                       f"array has a bitmap ({bitmap}); only dirty regions are rebuilt")]
    cap, speed = facts.get("cap_bps"), _speed_max_bps(facts)
    expected = phases.rebuild_expected(float(kib) * 1024, (cap, speed))
    if expected is None:
        return []
    limits = [f"cap {cap / 2**20:g} MiB/s" if cap else "",
              f"speed_limit_max {speed / 1024:g} KiB/s" if speed else ""]
    note = f"{float(kib) / 1024:g} MiB at min({', '.join(w for w in limits if w)})"
    return [Metric("rebuild_expected_seconds", expected, "s", note=note)]


def _rebuild_rate(facts: Mapping[str, Any], running: Sequence[Mapping[str, Any]]
                  ) -> list[Metric]:
    """rebuild_bw (B/s from mdstat's progress) and rebuild_share (of the byte cap)."""
    rate = phases.progress_rate(_done_bytes(running))
    if rate is None:
        return []
    out = [Metric("rebuild_bw", rate, "B/s")]
    if facts.get("cap_bps"):
        out.append(Metric("rebuild_share", rate / float(facts["cap_bps"]), ""))
    return out


def workload_shares(parsed_metrics: Sequence[Metric], events: Sequence[Mapping[str, Any]]
                    ) -> list[Metric]:
    """workload_share{phase=restore}: the workload's bytes per second in the rebuild's
    phase as a share of the members' byte cap (beside rebuild_share: who got the disk)."""
    cap = _fail_facts(events).get("cap_bps")
    if not cap:
        return []
    return [Metric("workload_share", m.value / float(cap), "", dict(m.tags))
            for m in parsed_metrics if m.name == "bw" and m.value is not None
            and m.tags.get("phase") == "restore"]
