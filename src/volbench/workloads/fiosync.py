"""fio and commits: the `sync:` axis as fio options, and fio's `sync` section as metrics.

The axis (core/syncmode.py) becomes `--fsync=N`, `--fdatasync=N`, `--sync=dsync` or
`--sync=sync`. Written as raw options (`options: {fdatasync: 1}`) a mode is read as the
axis, so the case is the same case, judged the same way; given beside `sync:`, an option
that also says how writes sync is refused (`sync: dsync` with `options: {sync: 0}`).

A mode runs fio's psync engine unless the workload names its `ioengine`: what a database
does (pwrite, then fdatasync), and an engine whose sync calls fio times. fio's libaio
engine does not time them: it makes the call inline, and fio 3.16 starts the clock after
it returns (mean 153 ns for fdatasyncs of ~0.4 ms: tests/data/fio/3.16/
sync-fdatasync1-libaio-jsonplus.json) while 3.31 on start it at the write before it
(3.33: 994 µs of "sync" for a 1013 µs write-plus-sync cycle; with psync the write and the
sync add up to the cycle: 300 + 461 µs for 764 µs). So libaio with fsync/fdatasync is
refused, and an imported libaio run's sync latencies are kept as "not measured".

fio's JSON has a `sync` section from fio 3.4 on (2.x and 3.1 have none): `lat_ns` with
min, max, mean, stddev, `percentile` and, with json+, `bins`; `N` (the count) from 3.18 on.
Its `total_ios` counts fsyncs only (fdatasyncs go to another direction fio does not print:
0 in every fdatasync capture here), so the count is N, else total_ios, else the bins' sum.
fio's per-second logs carry no sync entries (fio adds a sync's time to the run's totals
only: add_sync_clat_sample), so there is no per-second sync series; for dsync/sync modes
the write itself is the commit and its per-second latency is the series.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volbench.config.fields import Reader
from volbench.config.syncmode import SYNC
from volbench.core import syncmode
from volbench.core.model import Histogram, Metric, Params, Parsed, Scalar
from volbench.core.syncmode import SyncMode

OP = "sync"
NS = 1e-9  # the sync section is in ns (lat_ns) in every version that has it
# fio options that say how writes sync, read as the axis when it is not given.
MODE_OPTIONS = ("fsync", "fdatasync", "sync")
# Refused beside `sync:` (each also makes writes durable its own way).
CONFLICTING = (*MODE_OPTIONS, "sync_file_range", "write_barrier")
# rw modes that write (a sync mode means nothing for reads and trims).
WRITES = ("write", "randwrite", "rw", "readwrite", "randrw")
# Engines whose sync calls fio times from the call's start to its end (synchronous
# engines time every call around it; io_uring queues the sync as an I/O of its own).
TIMED_ENGINES = ("psync", "sync", "pvsync", "pvsync2", "vsync", "io_uring")
# The engine a case with a sync mode runs when the workload names none.
ENGINE = "psync"
UNTIMED = ("not measured: fio's libaio engine does not time its sync calls (fio before "
           "3.31 starts the clock after the call, 3.31 on at the write before it)")


def fio_options(params: Params) -> list[tuple[str, str]]:
    """The fio options of a case's sync mode (none for `none`)."""
    mode = syncmode.of(params)
    if mode.calls:
        return [(mode.kind, str(mode.every))]
    return [("sync", mode.kind)] if mode.kind in syncmode.FLAGS else []


def option_mode(key: str, value: object) -> SyncMode:
    """The mode of one fio option (fsync=N, fdatasync=N, sync=0|1|none|sync|dsync; before
    fio 3.24 `sync` was a boolean: 1 is O_SYNC); a ValueError for a value fio refuses."""
    text = str(value).strip().lower()
    if key == "sync":
        word = {"0": "none", "false": "none", "1": "sync", "true": "sync"}.get(text, text)
    else:
        word = "none" if text == "0" else f"{key}:{text}"
    return syncmode.parse(word)


def options_mode(options: Mapping[str, object]) -> SyncMode:
    """The sync mode fio's record of a job's options says (an imported output's; the first
    of fsync, fdatasync, sync that syncs), none when none does."""
    for key in MODE_OPTIONS:
        if key in options:
            try:
                mode = option_mode(key, options[key])
            except ValueError:
                continue
            if mode.syncs:
                return mode
    return SyncMode()


def _from_options(r: Reader, options: dict[str, str]) -> SyncMode | None:
    """The mode raw options give (removing them from `options`), None when they give none."""
    found: list[tuple[str, SyncMode]] = []
    for key in MODE_OPTIONS:
        if key not in options:
            continue
        try:
            mode = option_mode(key, options[key])
        except ValueError as exc:
            r.problem(f"options.{key}", str(exc), "or write the mode as sync: (docs/workloads/"
                      "fio.md)")
            continue
        del options[key]
        if mode.syncs:
            found.append((key, mode))
    if len(found) > 1:
        named = ", ".join(f"{k}: {m.text}" for k, m in found)
        r.problem("options", f"give one sync mode, not several ({named})",
                  "keep one, or write it as sync: (a list of modes runs each as a case)")
    return found[0][1] if found else None


def read(r: Reader, matrix: dict[str, tuple[Scalar, ...]], options: dict[str, str]) -> bool:
    """Put the `sync` axis into `matrix` (when given, or when `options` say a mode) and check
    it against the other fields; True when sync cases run the default engine (psync)."""
    if r.has("sync"):
        modes = r.get(SYNC)
        for key in CONFLICTING:
            if key in options:
                r.problem(f"options.{key}", f"contradicts sync: ({', '.join(modes)}): "
                          "sync: says how writes are made durable",
                          f"remove {key} from options (sync: dsync is fio's sync=dsync, "
                          "{fdatasync: 1} its fdatasync=1)")
    else:
        mode = _from_options(r, options)
        if mode is None:
            return False
        modes = (mode.text,)
    matrix["sync"] = modes
    wanted = [syncmode.parse(m) for m in modes]
    if any(m.syncs for m in wanted) and not any(rw in WRITES for rw in matrix["rw"]):
        r.problem("sync", "applies to writes, and rw has none",
                  f"add a writing mode to rw ({', '.join(WRITES)}), or remove sync")
    return _check_engine(r, matrix, wanted)


def _check_engine(r: Reader, matrix: Mapping[str, tuple[Scalar, ...]],
                  modes: list[SyncMode]) -> bool:
    if not any(m.syncs for m in modes):
        return False
    if not r.has("ioengine"):
        deep = [d for d in matrix["iodepth"] if int(d) > 1]
        if deep:
            r.problem("iodepth", f"{deep[0]} with sync: the engine of a sync mode, {ENGINE}, "
                      "keeps one write in flight",
                      "give ioengine: io_uring for a sync mode at a deeper queue, or iodepth: 1")
        return True
    if any(m.calls for m in modes):
        for engine in matrix["ioengine"]:
            if engine not in TIMED_ENGINES:
                r.problem("ioengine", f"fio does not time the sync calls of {engine}",
                          f"use one of {', '.join(TIMED_ENGINES)} with fsync/fdatasync "
                          f"(psync is what a database does), or leave ioengine out")
    return False


def case(params: dict[str, Scalar], default_engine: bool) -> dict[str, Scalar]:
    """A matrix case with its sync mode as it runs: no `sync` for `none` or a mode that
    does not write, and the default engine for a sync mode when none was named."""
    mode = syncmode.of(params)
    if "sync" not in params:
        return params
    if not mode.syncs or params.get("rw") not in WRITES:
        return {k: v for k, v in params.items() if k != "sync"}
    if default_engine:
        return {**params, "ioengine": ENGINE}
    return params


# -- parsing ------------------------------------------------------------------------------

def engine_of(data: Mapping[str, Any], job: Mapping[str, Any]) -> str:
    """The job's ioengine as fio recorded it (fio's own default, psync, when not given)."""
    for options in (job.get("job options"), data.get("global options")):
        if isinstance(options, Mapping) and "ioengine" in options:
            return str(options["ioengine"])
    return "psync"


def _count(side: Mapping[str, Any], stats: Mapping[str, Any]) -> int | None:
    if "N" in stats:
        return int(stats["N"])
    if int(side.get("total_ios", 0) or 0) > 0:
        return int(side["total_ios"])
    bins = stats.get("bins")
    if isinstance(bins, Mapping) and bins:
        return sum(int(v) for v in bins.values())
    return None


def _seconds(job: Mapping[str, Any]) -> float:
    """How long the job wrote (ms in the JSON): the longest direction's runtime."""
    times = [float(job[op].get("runtime", 0) or 0) for op in ("write", "read", "trim")
             if isinstance(job.get(op), Mapping)]
    return max(times, default=0.0) / 1000.0


def _commit_mean(job: Mapping[str, Any], count: int | None, sync_mean: float) -> float | None:
    """What a committer waits for on average: its writes (the writes per sync, each at the
    write's mean latency) and then its sync. The sync call alone can mislead: where the
    writes are already stable (NFS from a `sync` export with O_DIRECT) the fdatasync finds
    nothing left to do (33 µs against xfs's 2 ms in examples/commit-latency.yaml) while the
    commit took 5 times as long."""
    write = job.get("write")
    stats = write.get("lat_ns") if isinstance(write, Mapping) else None
    writes = float(write.get("total_ios", 0) or 0) if isinstance(write, Mapping) else 0.0
    if not count or not writes or not isinstance(stats, Mapping) or "mean" not in stats:
        return None
    return writes / count * float(stats["mean"]) * NS + sync_mean


def _p99(stats: Any) -> float | None:
    found = stats.get("percentile") if isinstance(stats, Mapping) else None
    value = found.get("99.000000") if isinstance(found, Mapping) else None
    return float(value) * NS if value is not None else None


def _commit_p99(job: Mapping[str, Any], stats: Mapping[str, Any]) -> float | None:
    """A lower bound of the commits' p99: a commit waits for its write and its sync, so it
    takes at least as long as either, and p99(commit) >= max(p99(write), p99(sync)). fio
    times the two apart (no percentile of their sum is in its output); the write's is its
    completion latency (fio's default percentiles), itself below the write's whole time."""
    write = job.get("write")
    parts = [_p99(stats)]
    if isinstance(write, Mapping):
        parts.append(_p99(write.get("lat_ns")) or _p99(write.get("clat_ns")))
    known = [p for p in parts if p is not None]
    return max(known) if len(known) == 2 else None


def metrics(job: Mapping[str, Any], tags: Mapping[str, str], engine: str
            ) -> tuple[list[Metric], list[Histogram]]:
    """op=sync metrics of one job entry: count (`total_ios`), syncs per second (`iops`),
    latency mean/min/max/stddev and percentiles (`lat_*`, s), the mean commit latency
    (`commit_lat_mean`: the writes of a sync and the sync), a lower bound of the commits'
    p99 (`commit_lat_p99`) and the json+ histogram (`lat`); nothing when the job made no
    sync call."""
    side = job.get(OP)
    stats = side.get("lat_ns") if isinstance(side, Mapping) else None
    if not isinstance(side, Mapping) or not isinstance(stats, Mapping):
        return [], []
    count = _count(side, stats)
    if count == 0 or (count is None and not float(stats.get("mean", 0) or 0)):
        return [], []
    tags = {**tags, "op": OP}
    out: list[Metric] = []
    if count is not None:
        out.append(Metric("total_ios", float(count), "", tags))
        seconds = _seconds(job)
        if seconds > 0:
            out.append(Metric("iops", count / seconds, "op/s", tags))
    timed = engine != "libaio"
    note = "" if timed else UNTIMED
    for name in ("mean", "min", "max", "stddev"):
        if name in stats:
            out.append(Metric(f"lat_{name}", float(stats[name]) * NS if timed else None,
                              "s", tags, note))
    for key, value in (stats.get("percentile") or {}).items():
        if float(key) > 0:
            out.append(Metric(f"lat_p{float(key):g}", float(value) * NS if timed else None,
                              "s", tags, note))
    commit = _commit_mean(job, count, float(stats.get("mean", 0) or 0) * NS)
    if commit is not None:
        out.append(Metric("commit_lat_mean", commit if timed else None, "s", tags, note))
    tail = _commit_p99(job, stats)
    if tail is not None:
        # its label says "at least" (core/metricinfo.py): a note would repeat it in titles
        out.append(Metric("commit_lat_p99", tail if timed else None, "s", tags, note))
    bins = stats.get("bins")
    hists = []
    if timed and isinstance(bins, Mapping) and bins:
        pairs = sorted((float(k) * NS, int(v)) for k, v in bins.items())
        hists.append(Histogram("lat", "s", tuple(pairs), tags))
    return out, hists


def totals(per_job: list[list[Metric]]) -> list[Metric]:
    """job=all sums over concurrent jobs' syncs (each job's metrics above): counts and
    rates add up, the mean latency is weighted by each job's count."""
    counts = [next((m.value for m in ms if m.name == "total_ios"), None) for ms in per_job]
    if not any(counts) or any(c is None for c in counts):
        return []
    tags = {"job": "all", "op": OP}
    out = [Metric("total_ios", float(sum(c or 0 for c in counts)), "", tags)]
    rates = [next((m.value for m in ms if m.name == "iops"), None) for ms in per_job]
    if all(r is not None for r in rates):
        out.append(Metric("iops", float(sum(r or 0 for r in rates)), "op/s", tags))
    total = sum(c or 0 for c in counts)
    for name in ("lat_mean", "commit_lat_mean"):
        means = [next((m for m in ms if m.name == name), None) for ms in per_job]
        if all(m is not None and m.value is not None for m in means):
            mean = sum((m.value or 0) * (c or 0) for m, c in zip(means, counts, strict=True)
                       if m is not None) / total
            out.append(Metric(name, mean, "s", tags))
    return out


def with_flushes(parsed: Parsed, device_io: Mapping[str, Any] | None) -> Parsed:
    """`flushes_per_sync` beside a run's sync count: the cache flushes its target's disks
    completed (/proc/diskstats, the run's `device_io`) per sync call. 0 on a write-through
    disk, 1 on a write-back one, one per disk under a linear LV (docs/lab.md): how a flush
    fans out, as the kernel counted it. Only for the run's whole count (one job, or the
    job=all / host=all total)."""
    flushes = (device_io or {}).get("flushes")
    totals = [m for m in parsed.metrics if m.name == "total_ios" and m.tags.get("op") == OP
              and {k: v for k, v in m.tags.items() if k != "op"} in ({}, {"job": "all"},
                                                                      {"host": "all"})]
    if not isinstance(flushes, int) or not totals or not totals[0].value:
        return parsed
    metric = Metric("flushes_per_sync", flushes / totals[0].value, "", dict(totals[0].tags))
    return Parsed((*parsed.metrics, metric), parsed.series, parsed.histograms)
