"""`repeat: {until: steady}`: which cases still need rounds before the SNIA rule holds.

Each target's case (workload + parameters) is steady once its `steady.metric` values in
run order have a steady window (volbench.stats.steady, the experiment's `steady:` rule);
until then it gets another round, up to `repeat.max`. Unlike `until: decided`, a case
waits for no other target: steadiness is a property of one device.
"""

from __future__ import annotations

from collections.abc import Sequence

from volbench.config.steady import SteadySpec
from volbench.core.model import RunResult, Status, canonical_json, params_key
from volbench.engine.adaptive import Pending
from volbench.stats.steady import steady_state


def unsteady(runs: Sequence[RunResult], spec: SteadySpec) -> set[Pending]:
    """Target/case pairs whose `spec.metric` (any of its tag sets) is not steady yet."""
    series: dict[Pending, dict[str, list[float]]] = {}
    for run in sorted(runs, key=lambda r: r.started):
        if run.status is not Status.OK or run.warmup:
            continue
        case = Pending(run.target, run.workload, params_key(run.params))
        per_tags = series.setdefault(case, {})
        for m in run.metrics:
            # Window metrics (bursts) are parts of a run, not rounds.
            if m.name == spec.metric and m.value is not None and "window" not in m.tags:
                per_tags.setdefault(canonical_json(dict(m.tags)), []).append(m.value)
    return {
        case for case, per_tags in series.items()
        if not per_tags or any(
            not steady_state(values, window=spec.window, range_limit=spec.range,
                             slope_limit=spec.slope).reached
            for values in per_tags.values())
    }
