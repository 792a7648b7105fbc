"""Load curves in the report: per target, workload and case, latency against delivered
rate, the saturation rate, the knee and the highest rate within the objective.

Every run of a curve carries a `load` annotation written when it ran (volbench.engine.curves):
its step, offered rate, delivered rate and latency statistics. A round (repetition) is
one whole curve, so saturation, knee and SLA rate are computed per round and summarised
over rounds like any metric (mean, 95 % interval); they become case summaries named
`saturation_iops`, `knee_iops`, `sla_iops` (`…_tps` for pgbench), so the verdicts
compare them across targets with the same statistics as everything else. A step's p99
is read from the histograms of all its runs merged (all operations together).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from volbench.core import metricinfo
from volbench.core.model import CaseHistogram, Params, RunResult, Status, canonical_json
from volbench.report.cases import CaseSummary
from volbench.stats import Summary, merge_histograms, percentile_from_histogram, summarize
from volbench.stats import curve as cv

# fio's completion latency; pgbench's transaction latency (from its transaction log).
LATENCY_HISTOGRAMS = ("clat", "latency")


@dataclass(frozen=True)
class CurvePoint:
    step: str
    offered: Summary | None  # None: the unthrottled saturation run
    rate: Summary
    lat_mean: Summary | None
    p99: float | None  # merged histograms of every run of the step (None: none kept)
    p99_runs: Summary | None  # per-run p99: the spread between rounds
    runs: int


@dataclass(frozen=True)
class Probe:
    """One run of a round's search: where it was held and whether it met the objective."""

    repetition: int
    step: str
    offered: float | None
    rate: float
    latency: float | None
    met: bool | None


@dataclass(frozen=True)
class Curve:
    target: str
    workload: str
    params: Params  # the case without `load`
    rate_name: str  # "iops" or "tps"
    unit: str
    points: tuple[CurvePoint, ...]  # by offered rate, saturation last
    saturation: CaseSummary | None
    knee: CaseSummary | None
    sla: Mapping[str, Any] | None
    sla_rate: CaseSummary | None
    search: tuple[Probe, ...] = ()
    # Rounds whose lightest load already missed the objective (no SLA rate for them).
    sla_missed: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def summaries(self) -> list[CaseSummary]:
        return [s for s in (self.saturation, self.knee, self.sla_rate) if s is not None]


CurveKey = tuple[str, str, str]


def _step_text(step: object) -> str:
    return f"{step:g}" if isinstance(step, float) else str(step)


def _group(runs: Sequence[RunResult]) -> dict[CurveKey, list[tuple[int, RunResult]]]:
    out: dict[CurveKey, list[tuple[int, RunResult]]] = {}
    for index, run in enumerate(runs):
        if run.status is not Status.OK or run.warmup or "load" not in run.params:
            continue
        if not isinstance(run.annotations.get("load"), Mapping):
            continue
        rest = {k: v for k, v in run.params.items() if k != "load"}
        out.setdefault((run.target, run.workload, canonical_json(rest)), []).append((index, run))
    return out


def _merged_p99(totals: Sequence[CaseHistogram]) -> dict[tuple[str, str, str], float]:
    """(target, workload, params JSON) -> p99 of all the case's I/Os, every operation."""
    bins: dict[tuple[str, str, str], list[dict[float, int]]] = {}
    for h in totals:
        if h.name not in LATENCY_HISTOGRAMS or "load" not in h.params or "job" in h.tags:
            continue
        if h.tags.get("host", "all") == "all":  # one host's share is not the whole load
            key = (h.target, h.workload, canonical_json(dict(h.params)))
            bins.setdefault(key, []).append(dict(h.bins))
    out = {}
    for key, parts in bins.items():
        merged = merge_histograms(parts)
        if sum(merged.values()):
            out[key] = percentile_from_histogram(merged, 99.0)
    return out


def _summary(values: Sequence[float]) -> Summary | None:
    return summarize(values) if values else None


def _point(step: object, members: Sequence[RunResult], p99: float | None) -> CurvePoint:
    entries = [r.annotations["load"] for r in members]
    offered = [float(e["offered"]) for e in entries if isinstance(e.get("offered"), int | float)]
    rates = [float(e["rate"]) for e in entries if isinstance(e.get("rate"), int | float)]
    lat = [e.get("latency") or {} for e in entries]
    means = [float(x["mean"]) for x in lat if isinstance(x.get("mean"), int | float)]
    p99s = [float(x["p99"]) for x in lat if isinstance(x.get("p99"), int | float)]
    rate = summarize(rates) if rates else summarize([0.0])
    return CurvePoint(_step_text(step), _summary(offered), rate, _summary(means),
                      p99 if p99 is not None else (max(p99s) if p99s else None),
                      _summary(p99s), len(members))


def _figure(key: tuple[str, str, Params, str], metric: str,
            values: list[tuple[int, int, float]]) -> CaseSummary | None:
    """A per-round figure (saturation, knee, SLA rate) as a case summary of its own."""
    if not values:
        return None
    values.sort()
    target, workload, params, unit = key
    return CaseSummary(target, workload, params, metric, unit, {},
                       summarize([v for _, _, v in values]), tuple(v for _, _, v in values),
                       tuple(r for r, _, _ in values), tuple(i for _, i, _ in values))


def _curve(key: CurveKey, members: list[tuple[int, RunResult]],
           p99s: Mapping[tuple[str, str, str], float]) -> Curve:
    target, workload, _ = key
    first = members[0][1]
    params = {k: v for k, v in first.params.items() if k != "load"}
    rate_name = cv.run_rate_name(first)
    unit = "tx/s" if rate_name == "tps" else "op/s"
    sla = next((r.annotations["load"].get("sla") for _, r in members
                if isinstance(r.annotations["load"].get("sla"), Mapping)), None)
    by_step: dict[str, tuple[object, list[RunResult]]] = {}
    rounds: dict[int, list[tuple[int, RunResult]]] = {}
    for index, run in members:
        step = run.params["load"]
        by_step.setdefault(canonical_json(step), (step, []))[1].append(run)
        rounds.setdefault(run.repetition, []).append((index, run))
    points = [_point(step, runs, p99s.get((target, workload, canonical_json(dict(r0.params)))))
              for step, runs in by_step.values() for r0 in runs[:1]]
    points.sort(key=lambda p: float("inf") if p.offered is None else p.offered.mean)
    base = (target, workload, params, unit)
    saturation, knees, slas, search, missed = [], [], [], [], []
    for rep, items in sorted(rounds.items()):
        entries = [r.annotations["load"] for _, r in items]
        sat = [(i, e) for (i, _), e in zip(items, entries, strict=True)
               if e.get("offered") is None and isinstance(e.get("rate"), int | float)]
        if sat:
            saturation.append((rep, sat[0][0], float(sat[0][1]["rate"])))
        # The knee is read on the steps: probes crowd the light end with short, noisy
        # runs, and the unthrottled run is held at full depth, not at a rate.
        steps = [e for e in entries if e.get("offered") is not None
                 and cv.probe_index(e.get("step")) is None]
        knee = cv.knee(cv.points_of(steps, "p99"))
        if knee is not None:
            knees.append((rep, items[0][0], knee))
        if sla is not None:
            stat, limit = str(sla["stat"]), float(sla["limit"])
            found = cv.sla_rate(cv.points_of(entries, stat), limit)
            if found is None:
                missed.append(rep)
            else:
                slas.append((rep, items[0][0], found))
            search += _search(rep, items, stat, limit)
    return Curve(target, workload, params, rate_name, unit, tuple(points),
                 _figure(base, f"saturation_{rate_name}", saturation),
                 _figure(base, f"knee_{rate_name}", knees), sla,
                 _figure(base, f"sla_{rate_name}", slas) if sla is not None else None,
                 tuple(search), tuple(missed))


def _search(rep: int, items: Sequence[tuple[int, RunResult]], stat: str, limit: float
            ) -> list[Probe]:
    """The round's runs in the order they ran, each with its verdict on the objective."""
    out = []
    for _, run in sorted(items, key=lambda item: item[1].started):
        e = run.annotations["load"]
        lat = (e.get("latency") or {}).get(stat)
        offered = e.get("offered")
        out.append(Probe(rep, _step_text(run.params["load"]),
                         float(offered) if isinstance(offered, int | float) else None,
                         float(e.get("rate") or 0.0),
                         float(lat) if isinstance(lat, int | float) else None,
                         None if not isinstance(lat, int | float) else lat <= limit))
    return out


def build(runs: Sequence[RunResult], totals: Sequence[CaseHistogram],
          wanted: Sequence[str] | None = None) -> tuple[list[Curve], list[CaseSummary]]:
    """The curves in `runs`, and their figures as case summaries (those `wanted`)."""
    p99s = _merged_p99(totals)
    curves = [_curve(key, members, p99s) for key, members in _group(runs).items()]
    summaries = [s for c in curves for s in c.summaries()
                 if metricinfo.selected(s.metric, s.unit, wanted)]
    return curves, summaries
