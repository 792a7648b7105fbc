"""Adaptive repetition: which (target, case) pairs still need runs to decide their verdict.

After the minimum number of rounds, every comparison of a target with the baseline
on a primary metric (the ones the verdict table shows) is tested; a pair whose
comparison is not yet decided — neither a difference nor an equivalence — gets
another interleaved round (together with the baseline for the same case), until
every comparison is decided or `repeat.max` is reached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.model import RunResult, Status, canonical_json
from volbench.report.metrics import comparable, info, is_primary
from volbench.stats import compare, is_decided

DEFAULT_THRESHOLD = 0.02


@dataclass(frozen=True)
class Pending:
    """A case (workload + parameters) on a target that needs more runs."""

    target: str
    workload: str
    params_key: str


def _values(runs: Sequence[RunResult]) -> dict[tuple[str, str, str], dict[tuple[str, str, str],
                                                                         list[float]]]:
    """(workload, params, target) -> (metric, unit, tags) -> values of measured OK runs."""
    out: dict[tuple[str, str, str], dict[tuple[str, str, str], list[float]]] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup:
            continue
        case = (run.workload, canonical_json(dict(run.params)), run.target)
        per_metric = out.setdefault(case, {})
        for m in run.metrics:
            if m.value is None or not is_primary(m.name, m.unit) or not comparable(
                    m.name, m.unit, m.tags):
                continue
            key = (m.name, m.unit, canonical_json(dict(m.tags)))
            per_metric.setdefault(key, []).append(m.value)
    return out


def pending(runs: Sequence[RunResult], baseline: str,
            thresholds: Mapping[str, float] | None = None) -> set[Pending]:
    """Target/case pairs whose comparison with the baseline is not decided yet."""
    thresholds = thresholds or {}
    values = _values(runs)
    undecided: set[Pending] = set()
    for (workload, params, target), metrics in values.items():
        if target == baseline:
            continue
        base = values.get((workload, params, baseline))
        if base is None:
            continue  # the baseline never produced this case: nothing to decide against
        for (name, unit, tags), candidate in metrics.items():
            reference = base.get((name, unit, tags))
            direction = info(name, unit).higher_is_better
            if not reference or direction is None:
                continue
            result = compare(candidate, reference, higher_is_better=direction,
                             threshold=thresholds.get(name, DEFAULT_THRESHOLD))
            if not is_decided(result):
                undecided.add(Pending(target, workload, params))
                break
    return undecided
