"""Burst and warm-up windows of one run, as metrics beside the whole-run ones.

A run whose per-second series starts above the level it ends at (a disk on burst credits)
or below it (cold caches, first touch) is not summed up by its whole-run mean: that mean
depends on how long the run was. For such a run this adds, for every per-second series
of the affected operation, the window means as the same metric with a `window` tag
(`burst` or `warmup`, and `sustained`), and the early window's length as `burst_seconds`
or `warmup_seconds` (tags of the series, e.g. op=read). A flat run gets nothing added, so
the absence of `burst_seconds` and `warmup_seconds` means none was found.

The regime is decided on each operation's IOPS series (or its bandwidth series when it has
none, or tps for pgbench), by stats.changepoint, and the same boundary cuts the operation's
other series, so its IOPS and bandwidth windows cover the same seconds. A per-second mean
latency series (fio's `lat`) is cut too, into `lat_mean` per window: the seconds' means
weighted by the deciding series' rate (I/Os per second), which is the mean over the
window's I/Os; an unweighted mean of per-second means would count a second of 10 I/Os
like one of 10,000. Percentiles per window need histograms (workloads/fiologs.py).
Windows are the seconds stats.changepoint took each level from: stalled seconds and the
run's ragged end are in neither (the stall check reports stalls: how long, when).

`with_windows` works on any Parsed with series (live runs and imports alike).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from volbench.core.model import Metric, Parsed, Series
from volbench.stats.changepoint import BURST, WARMUP, Regimes, regimes

WINDOW_TAG = "window"
SUSTAINED = "sustained"
# Series that carry a run's rate, best first: the one the regime is decided on.
RATE_SERIES = ("iops", "tps", "bw")
# Per-second mean latency series, cut into window means weighted by the rate: name -> metric
# (fio's `lat` log; pgbench's progress lines' `lat`, so a pgbench story judges its
# sustained latency too rather than leaving it out, issue 32).
LATENCY_SERIES = {"lat": "lat_mean", "latency_avg": "latency_avg"}
SECONDS_METRIC = {BURST: "burst_seconds", WARMUP: "warmup_seconds"}


def _group(series: Sequence[Series]) -> dict[str, list[Series]]:
    """Rate series grouped by their tags other than the name (op=read, host=…)."""
    groups: dict[str, list[Series]] = {}
    for s in series:
        if (s.name in RATE_SERIES or s.name in LATENCY_SERIES) and len(s.points) > 0:
            key = repr(sorted(s.tags.items()))
            groups.setdefault(key, []).append(s)
    return groups


def _decider(group: Sequence[Series]) -> Series | None:
    rates = [s for s in group if s.name in RATE_SERIES]
    return min(rates, key=lambda s: RATE_SERIES.index(s.name)) if rates else None


def _found(series: Sequence[Series]) -> list[tuple[list[Series], Series, Regimes]]:
    """(group, deciding series, regimes) of every group that bursts or warms up."""
    out = []
    for group in _group(series).values():
        decider = _decider(group)
        if decider is None:
            continue
        found = regimes([v for _, v in decider.points])
        if found.kind in SECONDS_METRIC:
            out.append((group, decider, found))
    return out


def early_and_sustained(series: Sequence[Series]
                        ) -> list[tuple[Series, str, list[float], list[float]]]:
    """(deciding series, burst|warmup, its seconds in the early window, in the sustained
    one) for each group that bursts or warms up: for window figures taken from elsewhere
    (fio's per-second latency histograms)."""
    out = []
    for _, decider, found in _found(series):
        seconds = [t for t, _ in decider.points]
        out.append((decider, found.kind, [seconds[i] for i in found.early_indexes()],
                    [seconds[i] for i in found.sustained_indexes()]))
    return out


def window_metrics(series: Sequence[Series]) -> list[Metric]:
    """Window metrics for every group of rate series whose run bursts or warms up."""
    out: list[Metric] = []
    for group, decider, found in _found(series):
        out.append(Metric(SECONDS_METRIC[found.kind], round(found.early_seconds, 2), "s",
                          dict(decider.tags)))
        for s in group:
            out.extend(_cut(s, found, decider))
    return out


def _cut(s: Series, found: Regimes, decider: Series) -> list[Metric]:
    """The series' mean in the early window and in the sustained one (after the second that
    straddles the change and before the run's end, stalled seconds left out, as the
    detector takes them); latency means weighted by the rate."""
    if s.name in LATENCY_SERIES:
        return _cut_latency(s, found, decider)
    values = [v for _, v in s.points]
    if len(values) != found.n:
        return []  # not sampled like the deciding series: its seconds would not line up
    early = statistics.fmean(values[i] for i in found.early_indexes())
    sustained = statistics.fmean(values[i] for i in found.sustained_indexes())
    return [
        Metric(s.name, early, s.unit, {**s.tags, WINDOW_TAG: found.kind}),
        Metric(s.name, sustained, s.unit, {**s.tags, WINDOW_TAG: SUSTAINED}),
    ]


def _cut_latency(s: Series, found: Regimes, decider: Series) -> list[Metric]:
    """Per window, the mean latency over its I/Os: the seconds' means weighted by the
    deciding series' rate in that second (matched by time; a second without I/O logs no
    latency)."""
    latency = dict(s.points)
    out = []
    windows = ((found.kind, [decider.points[i] for i in found.early_indexes()]),
               (SUSTAINED, [decider.points[i] for i in found.sustained_indexes()]))
    for window, points in windows:
        pairs = [(latency[t], rate) for t, rate in points if t in latency and rate > 0]
        weight = sum(rate for _, rate in pairs)
        if weight > 0:
            mean = sum(value * rate for value, rate in pairs) / weight
            out.append(Metric(LATENCY_SERIES[s.name], mean, s.unit,
                              {**s.tags, WINDOW_TAG: window}))
    return out


def with_windows(parsed: Parsed) -> Parsed:
    """`parsed` with its window metrics added (unchanged when the run is flat)."""
    extra = window_metrics(parsed.series)
    if not extra:
        return parsed
    return Parsed(parsed.metrics + tuple(extra), parsed.series, parsed.histograms)
