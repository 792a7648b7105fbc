"""Load curves: what one run delivered, the knee of a curve, the highest rate within a
latency objective, and the next probe of the search for it. Pure functions over the
result model (docs/curves.md has the definitions and why).

A curve is measured in rounds: each round runs the unthrottled saturation run, then
every step at its offered rate (a fraction of that round's saturation, or an absolute
rate), then the SLA probes. One round gives one curve; rounds are repetitions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.core.model import Metric, RunResult

# Latency statistic names an objective may use, and the per-run metric that holds each
# (fio's completion-latency percentiles; mean is the total latency, submission included).
SLA_STATS = {"p50": "clat_p50", "p90": "clat_p90", "p95": "clat_p95", "p99": "clat_p99",
             "p99.9": "clat_p99.9", "mean": "lat_mean"}
# pgbench: transaction latency (with --rate pgbench counts it from the scheduled start, so
# a transaction that waited for a busy client is timed from when it should have begun).
PGBENCH_SLA_STATS = {"p50": "latency_p50", "p90": "latency_p90", "p99": "latency_p99",
                     "p99.9": "latency_p99.9", "mean": "latency_avg"}
# The knee: the first point whose p99 exceeds this many times the light-load p99.
KNEE_FACTOR = 2.0
SATURATION = "max"
PROBE_PREFIX = "sla-"


def step_fraction(step: object) -> float | None:
    """"25%" -> 0.25; an absolute step (a number) -> None."""
    if isinstance(step, str) and step.endswith("%"):
        return float(step[:-1]) / 100.0
    return None


def offered_rate(step: object, saturation: float) -> float:
    """The offered rate of a step: its fraction of `saturation`, or its absolute rate."""
    fraction = step_fraction(step)
    if fraction is not None:
        return fraction * saturation
    if isinstance(step, int | float) and not isinstance(step, bool):
        return float(step)
    raise ValueError(f"not a load step: {step!r}")


def probe_index(step: object) -> int | None:
    """The number of a saturation probe step (`probe<N>`); None for any other step."""
    if isinstance(step, str) and step.startswith(PROBE_PREFIX):
        return int(step[len(PROBE_PREFIX):])
    return None


def _total_tags(metrics: Sequence[Metric], name: str) -> list[Metric]:
    """The metrics that together are the whole run: the job=all / host=all sums when the
    output has them, else the untagged (group-reported) ones, one per operation."""
    found = [m for m in metrics if m.name == name and m.value is not None]
    for key in ("job", "host"):
        totals = [m for m in found if m.tags.get(key) == "all"]
        if totals:
            return totals
    return [m for m in found if not ({"job", "host"} & set(m.tags))]


def run_rate(run: RunResult) -> float | None:
    """Operations per second the run delivered (fio: IOPS over every operation; pgbench:
    tps)."""
    for name in ("iops", "tps"):
        picked = _total_tags(run.metrics, name)
        if picked:
            return sum(float(m.value or 0.0) for m in picked)
    return None


def run_latency(run: RunResult, stat: str) -> float | None:
    """The run's latency statistic in seconds: for several operations (a mixed fio mode)
    the worst of them (an objective holds for reads and writes each); mean latency is
    weighted by each operation's rate."""
    name = SLA_STATS.get(stat) if run_rate_name(run) == "iops" else PGBENCH_SLA_STATS.get(stat)
    if name is None:
        return None
    values = _total_tags(run.metrics, name)
    if not values:
        return None
    if stat != "mean" or len(values) == 1:
        return max(float(m.value or 0.0) for m in values)
    rates = {m.tags.get("op"): float(m.value or 0.0) for m in _total_tags(run.metrics, "iops")}
    weight = sum(rates.get(m.tags.get("op"), 0.0) for m in values)
    if weight <= 0:
        return max(float(m.value or 0.0) for m in values)
    return sum(float(m.value or 0.0) * rates.get(m.tags.get("op"), 0.0)
               for m in values) / weight


def run_rate_name(run: RunResult) -> str:
    """The name of the rate the run's tool reports: `tps` for pgbench, else `iops`."""
    return "tps" if any(m.name == "tps" for m in run.metrics) else "iops"


@dataclass(frozen=True)
class Point:
    """One run (or one step's mean) of a curve: offered rate (None: unthrottled),
    achieved rate, latency statistic (seconds)."""

    offered: float | None
    rate: float
    latency: float | None


def ordered(points: Sequence[Point]) -> list[Point]:
    """By offered rate, the unthrottled saturation point last."""
    return sorted(points, key=lambda p: math.inf if p.offered is None else p.offered)


def crossing(below: Point, above: Point, level: float) -> float:
    """The achieved rate between two points at which latency reaches `level`, read on a
    straight line through their inverse latencies: a queue's inverse latency falls
    linearly with load (M/M/1: 1/W = mu - lambda), so this is exact there, where a line
    through the latencies themselves (convex in the load) crosses early. `below` has
    latency <= level < `above`'s; both latencies positive."""
    assert below.latency is not None and above.latency is not None
    inverse_low, inverse_high = 1.0 / below.latency, 1.0 / above.latency
    if inverse_low == inverse_high:
        return below.rate
    share = (inverse_low - 1.0 / level) / (inverse_low - inverse_high)
    return below.rate + min(1.0, max(0.0, share)) * (above.rate - below.rate)


def knee(points: Sequence[Point], factor: float = KNEE_FACTOR) -> float | None:
    """The achieved rate at which latency reaches `factor` times its value at the
    lightest load, interpolated between the last point below that line and the first
    above it (`crossing`); None: it never does, or there are too few points.

    A ratio to the light-load latency, not a fitted elbow: it needs no model of the
    curve, reads the same for a 50 µs and a 5 ms disk, and doubling of response time is
    the usual capacity-planning line (an M/M/1 server reaches it at 50 % utilisation;
    a throttled disk, whose light-load latency is its own, much later). Read at the
    last step below the line, as it was, the knee snapped to the steps: -9 to -11 %
    median error on an M/M/1 device with steps of 25 % (docs/curves.md).
    """
    line = [p for p in ordered(points) if p.latency is not None and p.latency > 0]
    if len(line) < 2:
        return None
    light = line[0].latency
    assert light is not None
    for before, point in itertools.pairwise(line):
        if point.latency is not None and point.latency > factor * light:
            return crossing(before, point, factor * light)
    return None


def sla_rate(points: Sequence[Point], limit: float) -> float | None:
    """The highest rate meeting the objective: the highest measured rate that met it,
    with every lighter load meeting it too (a noisy light step that fails ends the
    search there: the objective was not reliably met beyond it), carried on to where the
    line to the next, failing, point crosses the limit (`crossing`). The measured point
    alone is biased low by half the last bisection bracket (0.7-3.6 %, docs/curves.md).
    None: not met even at the lightest load. Never above the saturation point's rate (an
    offered rate above saturation delivers no more)."""
    best: Point | None = None
    failed: Point | None = None
    ceiling = max((p.rate for p in points if p.offered is None), default=math.inf)
    for p in ordered(points):
        if p.latency is None:
            continue
        if p.latency > limit:
            failed = p
            break
        best = p if best is None or p.rate >= best.rate else best
    if best is None:
        return None
    found = best.rate
    if failed is not None and best.latency is not None and best.latency > 0:
        found = max(found, crossing(best, failed, limit))
    return min(found, ceiling)


def probe_rate(points: Sequence[Point], limit: float, saturation: float) -> float:
    """The offered rate of the next SLA probe: the middle of the bracket between the
    highest offered rate that met the objective (all lighter ones meeting too) and the
    lowest one that failed. Bisection halves the bracket with every probe, so k probes
    narrow the answer to 1/2^k of the gap the steps left. Nothing failed: probe at
    saturation (the objective holds up to it). Nothing met: halve the lightest rate."""
    low = 0.0
    high: float | None = None
    for p in ordered([p for p in points if p.offered is not None]):
        if p.latency is None:
            continue
        assert p.offered is not None
        if p.latency > limit:
            high = p.offered
            break
        low = p.offered
    if high is None:
        return saturation
    return (low + high) / 2.0


def points_of(entries: Sequence[Mapping[str, object]], stat: str) -> list[Point]:
    """Points from runs' `load` annotations ({"offered", "rate", "latency": {stat: …}})."""
    out = []
    for e in entries:
        rate = e.get("rate")
        lat = e.get("latency")
        value = lat.get(stat) if isinstance(lat, Mapping) else None
        offered = e.get("offered")
        if not isinstance(rate, int | float):
            continue
        out.append(Point(float(offered) if isinstance(offered, int | float) else None,
                         float(rate), float(value) if isinstance(value, int | float) else None))
    return out
