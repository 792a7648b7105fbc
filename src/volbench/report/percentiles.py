"""Latency percentiles over all repetitions of a case, from merged histograms.

Averaging each run's p99 is wrong (the mean of p99s is not the p99 of all I/Os);
fio's json+ bins are added across runs and the percentiles read from the sum
(docs/statistics.md, "Latency percentiles across repetitions").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.core.model import CaseHistogram, Params, RunResult, Status, canonical_json, params_key
from volbench.stats import percentiles_from_histogram

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


def case_histograms(runs: Sequence[RunResult]) -> list[CaseHistogram]:
    """Every finished measured run's histograms added up per case (when the store has not
    done it already: the store keeps these totals as runs are saved)."""
    totals: dict[tuple[str, str, str, str, str], dict[float, int]] = {}
    first: dict[tuple[str, str, str, str, str], tuple[RunResult, str, Mapping[str, str]]] = {}
    counted: dict[tuple[str, str, str, str, str], int] = {}
    tag_keys: dict[int, str] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup or not run.parsed.histograms:
            continue
        case_params = params_key(run.params)
        for h in run.parsed.histograms:
            tags_key = tag_keys.get(id(h.tags))
            if tags_key is None:
                tags_key = tag_keys[id(h.tags)] = canonical_json(dict(h.tags))
            key = (run.target, run.workload, case_params, h.name, tags_key)
            acc = totals.get(key)
            if acc is None:
                acc = totals[key] = {}
                first[key] = (run, h.unit, h.tags)
            get = acc.get
            for value, count in h.bins:
                acc[value] = get(value, 0) + count
            counted[key] = counted.get(key, 0) + 1
    return [CaseHistogram(run.target, run.workload, run.params, key[3], unit, tags,
                          counted[key], tuple(sorted(acc.items())))
            for key, acc in totals.items() for run, unit, tags in (first[key],)]


def merged_percentiles(runs: Sequence[RunResult],
                       totals: Sequence[CaseHistogram] | None = None,
                       percentiles: Sequence[float] = PERCENTILES) -> list[MergedPercentiles]:
    """Percentiles of each case's merged histogram (from `totals` if given, else the runs)."""
    out = []
    for case in (totals if totals is not None else case_histograms(runs)):
        total = sum(count for _, count in case.bins)
        if total == 0:
            continue
        values = percentiles_from_histogram(dict(case.bins), percentiles)
        out.append(MergedPercentiles(case.target, case.workload, case.params, case.name,
                                     case.unit, case.tags, case.runs, total,
                                     tuple(zip(percentiles, values, strict=True))))
    return out
