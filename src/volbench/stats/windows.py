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
other series, so its IOPS and bandwidth windows cover the same seconds.
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
SECONDS_METRIC = {BURST: "burst_seconds", WARMUP: "warmup_seconds"}


def _group(series: Sequence[Series]) -> dict[str, list[Series]]:
    """Rate series grouped by their tags other than the name (op=read, host=…)."""
    groups: dict[str, list[Series]] = {}
    for s in series:
        if s.name in RATE_SERIES and len(s.points) > 0:
            key = repr(sorted(s.tags.items()))
            groups.setdefault(key, []).append(s)
    return groups


def _decider(group: Sequence[Series]) -> Series:
    return min(group, key=lambda s: RATE_SERIES.index(s.name))


def window_metrics(series: Sequence[Series]) -> list[Metric]:
    """Window metrics for every group of rate series whose run bursts or warms up."""
    out: list[Metric] = []
    for group in _group(series).values():
        decider = _decider(group)
        found = regimes([v for _, v in decider.points])
        if found.kind not in SECONDS_METRIC:
            continue
        out.append(Metric(SECONDS_METRIC[found.kind], round(found.early_seconds, 2), "s",
                          dict(decider.tags)))
        for s in group:
            out.extend(_cut(s, found))
    return out


def _cut(s: Series, found: Regimes) -> list[Metric]:
    """The series' mean in the early window and in the sustained one (after the second that
    straddles the change, as the detector takes it)."""
    values = [v for _, v in s.points]
    if len(values) != found.n:
        return []  # not sampled like the deciding series: its seconds would not line up
    early = statistics.fmean(values[: found.boundary])
    sustained = statistics.fmean(values[found.boundary + 1 :])
    return [
        Metric(s.name, early, s.unit, {**s.tags, WINDOW_TAG: found.kind}),
        Metric(s.name, sustained, s.unit, {**s.tags, WINDOW_TAG: SUSTAINED}),
    ]


def with_windows(parsed: Parsed) -> Parsed:
    """`parsed` with its window metrics added (unchanged when the run is flat)."""
    extra = window_metrics(parsed.series)
    if not extra:
        return parsed
    return Parsed(parsed.metrics + tuple(extra), parsed.series, parsed.histograms)
