"""Load curves at run time: the offered rate of each step, resolved when it runs.

A step's rate depends on a measurement: the saturation run of the same round (same
target, workload, other parameters, repetition). The runner asks `Resolver.offered`
before a step or probe runs, and hands every finished run to `Resolver.note`. What
was resolved is stored with the run (annotation `load`, metric `offered`), so a
resumed experiment reads it back from the store instead of measuring again.

If the round's saturation run failed (or adaptive repetition added a round without
it), the latest earlier round's saturation is used, and the annotation says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.core.model import Metric, Params, Parsed, RunResult, Status, canonical_json
from volbench.stats import curve

# (target, workload, parameters without `load`, warm-up)
CurveKey = tuple[str, str, str, bool]


@dataclass(frozen=True)
class Resolved:
    """A load step resolved to an offered rate: the step, the rate (None for the unthrottled
    saturation run), and the saturation run it came from."""

    step: Any
    offered: float | None  # None: the unthrottled saturation run
    saturation: float | None
    saturation_round: int | None


def sla_lookup(workloads: Sequence[Any]) -> Callable[[str], dict[str, Any] | None]:
    """workload name -> its objective as recorded with the runs (None: no `sla:`)."""
    found: dict[str, dict[str, Any]] = {}
    for spec in workloads:
        load = getattr(spec, "load", None)
        if load is not None and load.sla is not None:
            found[spec.name] = load.sla.describe()
    return found.get


def curve_key(target: str, workload: str, params: Params, warmup: bool) -> CurveKey:
    """The identity of one curve: target, workload and params without the load step, so every
    step of a curve shares it."""
    rest = {k: v for k, v in params.items() if k != "load"}
    return (target, workload, canonical_json(rest), warmup)


class Resolver:
    """Saturation rates and step results seen so far, per curve and round."""

    def __init__(self, sla: Callable[[str], dict[str, Any] | None],
                 stored: Sequence[RunResult] = ()) -> None:
        """`sla(workload)`: its objective as recorded; `stored`: the runs a resumed
        experiment already has."""
        self._sla = sla
        self._saturation: dict[CurveKey, dict[int, float]] = {}
        self._entries: dict[tuple[CurveKey, int], list[dict[str, Any]]] = {}
        for run in stored:
            self.note(run)

    def note(self, run: RunResult) -> None:
        """Remember a finished saturation run's rate, so the curve's later steps offer their
        share of it (failed runs are ignored)."""
        entry = run.annotations.get("load")
        if run.status is not Status.OK or not isinstance(entry, dict):
            return
        key = curve_key(run.target, run.workload, run.params, run.warmup)
        rate = entry.get("rate")
        if run.params.get("load") == curve.SATURATION and isinstance(rate, int | float):
            self._saturation.setdefault(key, {})[run.repetition] = float(rate)
        self._entries.setdefault((key, run.repetition), []).append(entry)

    def resolve(self, target: str, workload: str, params: Params, repetition: int,
                warmup: bool) -> Resolved | None:
        """The run's offered rate (None for a run of no curve); raises VolbenchError when
        there is no saturation measurement to resolve a step from."""
        step = params.get("load")
        if step is None:
            return None
        if step == curve.SATURATION:
            return Resolved(step, None, None, None)
        key = curve_key(target, workload, params, warmup)
        rounds = self._saturation.get(key, {})
        earlier = [r for r in rounds if r <= repetition]
        if not earlier:
            raise VolbenchError(f"load step {step} of {workload} on {target}: no saturation "
                                "run of this case finished before it, so its rate is unknown "
                                "(see the failed load=max run)")
        used = max(earlier)
        saturation = rounds[used]
        index = curve.probe_index(step)
        if index is None:
            offered = curve.offered_rate(step, saturation)
        else:
            sla = self._sla(workload) or {}
            points = curve.points_of(self._entries.get((key, repetition), []),
                                     str(sla.get("stat", "p99")))
            offered = curve.probe_rate(points, float(sla.get("limit", 0.0)), saturation)
        return Resolved(step, offered, saturation, used)

    def record(self, result: RunResult, resolved: Resolved, workload_sla: dict[str, Any] | None
               ) -> RunResult:
        """The run with what its rate was and what it delivered (annotation `load`, metric
        `offered`); then remembered for the steps and probes after it."""
        entry: dict[str, Any] = {"step": resolved.step, "offered": resolved.offered,
                                 "saturation": resolved.saturation,
                                 "saturation_round": resolved.saturation_round}
        metrics = result.parsed.metrics
        if result.status is Status.OK:
            entry["rate"] = curve.run_rate(result)
            stats = {"mean", "p99"} | ({str(workload_sla["stat"])} if workload_sla else set())
            entry["latency"] = {s: curve.run_latency(result, s) for s in sorted(stats)}
        if workload_sla:
            entry["sla"] = workload_sla
        if resolved.offered is not None:
            unit = "tx/s" if curve.run_rate_name(result) == "tps" else "op/s"
            metrics = (*metrics, Metric("offered", resolved.offered, unit, {}))
        done = replace(result, annotations={**result.annotations, "load": entry},
                       parsed=Parsed(metrics, result.parsed.series, result.parsed.histograms))
        self.note(done)
        return done
