"""Latency percentiles over all repetitions of a case, from merged histograms.

Averaging each run's p99 is wrong (the mean of p99s is not the p99 of all I/Os);
fio's json+ bins are added across runs and the percentiles read from the sum
(docs/statistics.md, "Latency percentiles across repetitions").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.model import Params, RunResult, Status, canonical_json
from volbench.stats import merge_histograms, percentile_from_histogram

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


@dataclass(frozen=True)
class MergedPercentiles:
    target: str
    workload: str
    params: Params
    name: str  # histogram name: "clat", "lat"
    unit: str
    tags: Mapping[str, str]
    runs: int
    samples: int
    # (percentile, value) in ascending percentile order.
    values: tuple[tuple[float, float], ...]

    def value(self, p: float) -> float | None:
        return next((v for q, v in self.values if q == p), None)


def merged_percentiles(
    runs: Sequence[RunResult], percentiles: Sequence[float] = PERCENTILES
) -> list[MergedPercentiles]:
    # Counts are added per case in a tight loop first: 100 000 runs carry ~23 million
    # bins, and merge_histograms validates every bin it sees. It then validates and sorts
    # the per-case totals, which are the same numbers.
    totals: dict[tuple[str, str, str, str, str], dict[float, int]] = {}
    first: dict[tuple[str, str, str, str, str], tuple[RunResult, str, Mapping[str, str]]] = {}
    counted: dict[tuple[str, str, str, str, str], int] = {}
    tag_keys: dict[int, str] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup or not run.parsed.histograms:
            continue
        params_key = canonical_json(dict(run.params))
        for h in run.parsed.histograms:
            tags_key = tag_keys.get(id(h.tags))
            if tags_key is None:
                tags_key = tag_keys[id(h.tags)] = canonical_json(dict(h.tags))
            key = (run.target, run.workload, params_key, h.name, tags_key)
            acc = totals.get(key)
            if acc is None:
                acc = totals[key] = {}
                first[key] = (run, h.unit, h.tags)
            get = acc.get
            for value, count in h.bins:
                acc[value] = get(value, 0) + count
            counted[key] = counted.get(key, 0) + 1
    out = []
    for key, acc in totals.items():
        merged = merge_histograms([acc])
        total = sum(merged.values())
        if total == 0:
            continue
        run, unit, tags = first[key]
        values = tuple((p, percentile_from_histogram(merged, p)) for p in percentiles)
        out.append(
            MergedPercentiles(
                run.target,
                run.workload,
                run.params,
                key[3],
                unit,
                tags,
                counted[key],
                total,
                values,
            )
        )
    return out
