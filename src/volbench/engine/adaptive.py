"""Adaptive repetition: which (target, case) pairs still need runs to decide their verdict.

After the minimum number of rounds, every comparison of a target with the baseline
on a deciding metric is tested; a pair whose comparison is not yet decided — neither
a difference nor an equivalence — gets another interleaved round (together with the
baseline for the same case), until every comparison is decided or `repeat.max` is
reached.

Each round's test is one look of a group-sequential design over the planned rounds
(volbench.stats.sequential, Pocock-type alpha spending): testing at a plain 5 % after
every round called identical targets different in ~20 % of experiments; the design keeps
that at 5 % (docs/statistics.md). The report reads the same design from the experiment's
`repeat:` and shows the verdicts and intervals of the look the comparison stopped at.

Deciding metrics: the ones named in `repeat.metrics`, or by default the case's headline
metrics (volbench.core.headline: IOPS for random I/O, bandwidth for sequential, tps, real and
other for jobs), falling back to the primary metrics except per-run tail percentiles
for a case without a headline. A p99 of
one run is itself an estimate from a few hundred slow I/Os; on a throttled disk it
swings so much from run to run that its comparison stayed open after 20 rounds
(bench/adaptive.py) while IOPS, bandwidth and mean latency were settled after 3.
Tail latency across runs is reported from merged histograms instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.core.headline import has_headline, headline
from volbench.core.metricinfo import comparable, info, is_primary
from volbench.core.model import RunResult, Status, canonical_json, params_key
from volbench.stats import SequentialDesign, Verdict, decide

_PERCENTILE = re.compile(r"_p\d+(\.\d+)?$")

DEFAULT_THRESHOLD = 0.02
FAMILY_ALPHA = 0.05  # the report's family-wise rate (report.family.FAMILY_ALPHA)


@dataclass(frozen=True)
class Pending:
    """A case (workload + parameters) on a target that needs more runs."""

    target: str
    workload: str
    params_key: str


def design(low: int, high: int) -> SequentialDesign | None:
    """The group-sequential design of `repeat: {min: low, max: high, until: decided}`."""
    return SequentialDesign.for_repeat(low, high)


def deciding(name: str, unit: str, wanted: Sequence[str] | None) -> bool:
    """Whether a metric decides when adaptive repetition may stop: the ones the user named, else
    the primary metrics other than percentiles."""
    if wanted:
        return name in wanted
    return is_primary(name, unit) and not _PERCENTILE.search(name)


def _values(runs: Sequence[RunResult], wanted: Sequence[str] | None = None
            ) -> dict[tuple[str, str, str], dict[tuple[str, str, str], list[float]]]:
    """(workload, params, target) -> (metric, unit, tags) -> values of measured OK runs."""
    out: dict[tuple[str, str, str], dict[tuple[str, str, str], list[float]]] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup:
            continue
        case = (run.workload, params_key(run.params), run.target)
        per_metric = out.setdefault(case, {})
        for m in run.metrics:
            if m.value is None or not deciding(m.name, m.unit, wanted) or not comparable(
                    m.name, m.unit, m.tags):
                continue
            key = (m.name, m.unit, canonical_json(dict(m.tags)))
            per_metric.setdefault(key, []).append(m.value)
    return out


def pending(runs: Sequence[RunResult], baseline: str,
            thresholds: Mapping[str, float] | None = None,
            metrics: Sequence[str] | None = None,
            design: SequentialDesign | None = None) -> set[Pending]:
    """Target/case pairs whose comparison with the baseline is not decided yet, each
    comparison tested as a look of `design` (None: at a plain alpha, for a fixed design)."""
    thresholds = thresholds or {}
    values = _values(runs, metrics)
    params_of = {(r.workload, params_key(r.params)): r.params for r in runs}
    tests: list[tuple[Pending, list[float], list[float], bool, float]] = []
    for (workload, params, target), measured in values.items():
        if target == baseline:
            continue
        base = values.get((workload, params, baseline))
        if base is None:
            continue  # the baseline never produced this case: nothing to decide against
        case_params = params_of.get((workload, params), {})
        keys = [(name, json.loads(tags)) for name, _, tags in measured]
        headlines_only = not metrics and has_headline(keys, case_params)
        for (name, unit, tags), candidate in measured.items():
            if headlines_only and not headline(name, json.loads(tags), case_params):
                continue
            reference = base.get((name, unit, tags))
            direction = info(name, unit).higher_is_better
            if not reference or direction is None:
                continue
            tests.append((Pending(target, workload, params), candidate, reference, direction,
                          thresholds.get(name, DEFAULT_THRESHOLD)))
    # The deciding comparisons are one family (report.family): each is tested at
    # Bonferroni's alpha/m, the smallest of the Holm levels the report uses, so what the
    # runner stopped on as decided stays decided in the report.
    alpha = FAMILY_ALPHA / max(1, len(tests))
    undecided: set[Pending] = set()
    for case, candidate, reference, direction, threshold in tests:
        if case in undecided:
            continue
        verdict = decide(candidate, reference, higher_is_better=direction,
                         threshold=threshold, alpha=alpha, design=design)
        if verdict is Verdict.INCONCLUSIVE:
            undecided.add(case)
    return undecided
