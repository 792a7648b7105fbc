"""fio's per-second logs: IOPS, bandwidth, mean latency, and latency histograms.

Every fio run (not client/server mode) writes, once a second:

- `fio_iops.N.log`, `fio_bw.N.log`: the second's IOPS and KiB/s (log_avg_msec=1000); a
  second in which nothing completed gets no line at all, and is filled in as 0 (`fill_gaps`);
- `fio_lat.N.log`: the second's mean total latency in ns (write_lat_log, averaged the same
  way; fio also writes clat and slat logs beside it, which are not kept);
- `fio_clat_hist.N.log`: the second's completion-latency histogram (write_hist_log,
  log_hist_msec=1000): fio's own 1856 bins, counts of that second only.

Why both latency logs: a window's mean latency is the I/O-weighted mean of its seconds'
means (weighted by the same second's IOPS), exact from the small lat log. A window's p99
cannot come from per-second means or per-second p99s; it comes from adding the window's
per-second histograms, the same bins fio's whole-run clat percentiles are read from, so a
window's `clat_p99` is as accurate as the whole run's (a bin is 1.6-3.1 % wide). Cost:
both are filled from numbers fio already keeps per I/O (`bench/fiolog_overhead.py`
measures it side by side: ~0.04 µs more CPU per I/O), and a histogram line is ~4-6 KB
a second per job and direction, mostly zeros that the store's zlib shrinks 10-30-fold.
fio writes no histogram line for the last, unfinished second of a run: a window's p99
leaves that second out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from volbench.core.model import Metric, Series
from volbench.stats.histogram import merge_histograms, percentile_from_histogram
from volbench.stats.windows import WINDOW_TAG, early_and_sustained

LOG_PREFIX = "fio"
OPS = ("read", "write", "trim")
# The options that make fio write the logs above (command line `--k=v` or job file `k=v`).
LOG_OPTIONS = (
    ("write_iops_log", LOG_PREFIX),
    ("write_bw_log", LOG_PREFIX),
    ("write_lat_log", LOG_PREFIX),
    ("write_hist_log", LOG_PREFIX),
    ("log_avg_msec", "1000"),
    ("log_hist_msec", "1000"),
)
# The files kept with the run (not fio_clat / fio_slat: the total latency says it).
LOG_GLOBS = tuple(f"{LOG_PREFIX}_{kind}.*.log" for kind in ("iops", "bw", "lat", "clat_hist"))
WINDOW_PERCENTILES = (99.0,)

_LOG_NAME = re.compile(rf"^{LOG_PREFIX}_(iops|bw|lat)\.(\d+)\.log$")
_HIST_NAME = re.compile(rf"^{LOG_PREFIX}_clat_hist\.(\d+)\.log$")
# fio's latency histogram (stat.h): 29 groups of 64 bins, values in ns.
PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_NR = 29 * PLAT_VAL


def plat_value(index: int) -> float:
    """A bin's value in ns, as fio's plat_idx_to_val computes it (the middle of the bin);
    the json+ output's bin keys are these values."""
    if index < 2 * PLAT_VAL:
        return float(index)
    error_bits = (index >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    return float(base + int((index % PLAT_VAL + 0.5) * (1 << error_bits)))


def _op(ddir: int) -> str:
    return OPS[ddir] if 0 <= ddir < len(OPS) else "other"


def _rows(text: str) -> list[tuple[int, float, str]]:
    """(second, value, op) of an averaged log; each sample covers the second ending at t."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            rows.append((round(float(parts[0]) / 1000.0), float(parts[1]), _op(int(parts[2]))))
    return rows


def parse_logs(logs: Mapping[str, str]) -> tuple[Series, ...]:
    """Per-second series: IOPS and bandwidth summed over jobs; mean latency (s) weighted
    over jobs by their IOPS in that second (a second without I/O has no latency)."""
    by_kind: dict[str, dict[str, list[tuple[int, float, str]]]] = {}
    for name, text in logs.items():
        m = _LOG_NAME.match(Path(name).name)
        if m:
            by_kind.setdefault(m.group(1), {})[m.group(2)] = _rows(text)
    sums: dict[tuple[str, str], dict[int, float]] = {}
    for kind in ("iops", "bw"):
        scale = 1024.0 if kind == "bw" else 1.0  # bw logs are KiB/s
        for rows in by_kind.get(kind, {}).values():
            for t, value, op in rows:
                bucket = sums.setdefault((kind, op), {})
                bucket[t] = bucket.get(t, 0.0) + value * scale
    series = [Series(kind, "B/s" if kind == "bw" else "op/s", fill_gaps(points), {"op": op})
              for (kind, op), points in sorted(sums.items())]
    return tuple(series) + _latency_series(by_kind.get("lat", {}), by_kind.get("iops", {}))


def fill_gaps(points: Mapping[int, float]) -> tuple[tuple[int, float], ...]:
    """(second, rate) in order, every second from the first to the last: a second without
    a line is a second without completions, so its rate is 0. fio's averaged logs write
    a line only when I/Os completed in the period (a real outage on a loop disk:
    tests/data/fio/3.33/loop-stall-gap.fio_iops.1.log has no lines for seconds 11-17 and
    19-20); taking the next line as covering the gap at its rate would make the stall disappear."""
    if not points:
        return ()
    first, last = min(points), max(points)
    return tuple((t, points.get(t, 0.0)) for t in range(first, last + 1))


def _latency_series(lat: Mapping[str, list[tuple[int, float, str]]],
                    iops: Mapping[str, list[tuple[int, float, str]]]) -> tuple[Series, ...]:
    weighted: dict[str, dict[int, list[float]]] = {}
    for job, rows in lat.items():
        rates = {(t, op): v for t, v, op in iops.get(job, [])}
        for t, value, op in rows:
            weight = rates.get((t, op), 1.0 if job not in iops else 0.0)
            if weight > 0:
                acc = weighted.setdefault(op, {}).setdefault(t, [0.0, 0.0])
                acc[0] += weight * value * 1e-9  # ns
                acc[1] += weight
    return tuple(Series("lat", "s", tuple((t, s / w) for t, (s, w) in sorted(points.items())),
                        {"op": op}) for op, points in sorted(weighted.items()))


def second_histograms(logs: Mapping[str, str]) -> dict[str, dict[float, dict[float, int]]]:
    """op -> second -> clat histogram (ns value -> count), summed over jobs. Lines of
    another bin count (log_hist_coarseness set in the user's options) are skipped."""
    out: dict[str, dict[float, dict[float, int]]] = {}
    values = _bin_values()
    for name, text in logs.items():
        if not _HIST_NAME.match(Path(name).name):
            continue
        # Spaces out first, so an empty bin is the string "0" (most of fio's 1856 are).
        for line in text.replace(" ", "").splitlines():
            parts = line.split(",")
            if len(parts) != 3 + PLAT_NR:
                continue
            t, op = round(float(parts[0]) / 1000.0), _op(int(parts[1]))
            counts = {v: int(c) for v, c in zip(values, parts[3:], strict=True) if c != "0"}
            bins = out.setdefault(op, {})
            bins[t] = merge_histograms([bins[t], counts]) if t in bins else counts
    return out


@functools.cache
def _bin_values() -> tuple[float, ...]:
    """Every bin's value (ns), computed once: per log it cost 5 ms a run."""
    return tuple(plat_value(i) for i in range(PLAT_NR))


def window_percentiles(logs: Mapping[str, str], series: Sequence[Series]) -> list[Metric]:
    """clat_p99 of each burst / warm-up window and of the sustained one after it, from
    the seconds' histograms added up (windows as stats.windows cuts them). A run without
    such windows (most runs: flat) has no window percentile, and its histogram logs are
    not read at all: reading them cost 7-14 ms a 10 s run (docs/architecture.md)."""
    windows = early_and_sustained(series)
    if not windows:
        return []
    hists = second_histograms(logs)
    out: list[Metric] = []
    for decider, kind, early, sustained in windows:
        by_second = hists.get(decider.tags.get("op", ""), {})
        for window, seconds in ((kind, early), ("sustained", sustained)):
            merged = merge_histograms(by_second[t] for t in seconds if t in by_second)
            if sum(merged.values()) == 0:
                continue
            for p in WINDOW_PERCENTILES:
                value = percentile_from_histogram(merged, p) * 1e-9
                out.append(Metric(f"clat_p{p:g}", value, "s",
                                  {**decider.tags, WINDOW_TAG: window}))
    return out
