"""The `load:` and `sla:` fields of a workload: the steps of a load curve and a latency
objective (docs/curves.md).

    load: {steps: [10%, 25%, 50%, 75%, 90%, 100%, 110%]}   # of the measured saturation
    load: {steps: [100, 200, 400]}                         # absolute rates (IOPS or tps)
    sla:  {p99: 5ms}                                       # p50 p90 p95 p99 p99.9 mean
    sla:  {p99: 5ms, probes: 4}                            # bisection probes per round

A curve becomes one parameter, `load`, whose values are the cases: "max" (the
unthrottled saturation run, always first in a round), each step, and "sla-1" … the
probes. The offered rate of a step is only known once the round's saturation run has
ended: the runner resolves it then (volbench.engine.curves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader
from volbench.config.sections import Section, Value
from volbench.config.spec import Field, Integer
from volbench.core.model import Params, Scalar
from volbench.stats.curve import PROBE_PREFIX, SATURATION, probe_index, step_fraction

DEFAULT_PROBES = 3
MAX_PROBES = 10
# The forms of a step and of a latency, also the JSON Schema's (`volbench schema`).
STEP_PATTERN = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$"
LATENCY_PATTERN = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|ms|s)\s*$"
_PERCENT = re.compile(STEP_PATTERN)
_LATENCY = re.compile(LATENCY_PATTERN)
_LATENCY_FACTORS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_STEP = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                   {"type": "string", "pattern": STEP_PATTERN}]}
LATENCY = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                     {"type": "string", "pattern": LATENCY_PATTERN}]}
STEPS = Value("steps", help="the curve's steps: percentages of the saturation rate (25%) or "
              "absolute rates (200)", value={"anyOf": [_STEP, {"type": "array", "items": _STEP,
                                                                "minItems": 1}]})
LOAD = Section("load", None, fields=(STEPS,), help="a load curve: steps of offered load "
               "(docs/curves.md)")
PROBES = Integer("probes", DEFAULT_PROBES, minimum=0, maximum=MAX_PROBES,
                 help="bisection probes per round for the highest rate meeting the objective")


def curve_fields(stats: tuple[str, ...]) -> tuple[Field[Any], ...]:
    """`load:` and `sla:` of a tool whose objective is one of `stats` (p99, mean …)."""
    objective = tuple(Value(stat, None, help=f"the objective: {stat} latency at most this "
                            "(5ms, 500us or seconds)", value=LATENCY) for stat in stats)
    sla = Section("sla", None, fields=(PROBES, *objective),
                  help="a latency objective, one of " + ", ".join(stats) + " (docs/curves.md)")
    return (LOAD, sla)


@dataclass(frozen=True)
class Sla:
    stat: str  # a key of the tool's statistics: "p99", "mean", …
    limit: float  # seconds
    probes: int = DEFAULT_PROBES

    def describe(self) -> dict[str, object]:
        return {"stat": self.stat, "limit": self.limit, "probes": self.probes}


@dataclass(frozen=True)
class Load:
    steps: tuple[Scalar, ...]
    sla: Sla | None = None

    def values(self) -> tuple[Scalar, ...]:
        """The `load` axis: saturation first, then the steps, then the probes in order."""
        probes = tuple(f"{PROBE_PREFIX}{i}" for i in range(1, self.sla.probes + 1)) \
            if self.sla else ()
        return (SATURATION, *self.steps, *probes)


def _step(value: object) -> Scalar:
    if isinstance(value, str):
        m = _PERCENT.match(value)
        if not m or not 0 < float(m.group(1)) <= 1000:
            raise ValueError(f"{value!r} is not a step: give a percentage of the saturation "
                             "rate (25%) or an absolute rate (200)")
        return f"{float(m.group(1)):g}%"
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return value
    raise ValueError(f"{value!r} is not a step: give a percentage (25%) or a rate (200)")


def _latency(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    m = _LATENCY.match(str(value))
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{value!r} is not a latency: write e.g. 5ms, 500us or 0.005")
    return float(m.group(1)) * _LATENCY_FACTORS[m.group(2)]


def parse(r: Reader, stats: tuple[str, ...]) -> Load | None:
    """`load:` and `sla:` of a workload (None without `load:`); problems go to `r`."""
    if not r.has("load"):
        if r.has("sla"):
            r.raw("sla")  # said once, below: not also an unknown field
            r.problem("sla", "an objective needs a load curve to search",
                      "add load: {steps: [10%, 25%, 50%, 75%, 90%, 100%]}")
        return None
    lr = r.sub(LOAD.name)
    raw = lr.raw(STEPS.name)
    steps: list[Scalar] = []
    for i, value in enumerate(raw if isinstance(raw, list) else [raw] if raw else []):
        try:
            step = _step(value)
        except ValueError as exc:
            lr.problem(f"steps[{i}]", str(exc))
            continue
        if step in steps:
            lr.problem(f"steps[{i}]", f"{step} is given twice", "list each step once")
        steps.append(step)
    if raw is not None and not steps and not any(p.path.startswith(lr.path) for p in
                                                  r.problems):
        lr.problem("steps", "no steps", "e.g. steps: [10%, 25%, 50%, 75%, 90%, 100%]")
    lr.finish()
    return Load(tuple(steps), _sla(r, stats) if r.has("sla") else None)


def _sla(r: Reader, stats: tuple[str, ...]) -> Sla | None:
    sr = r.sub("sla")
    probes = sr.get(PROBES)
    given = [k for k in sr.data if k != "probes"]
    if len(given) != 1 or given[0] not in stats:
        what = f"{', '.join(map(str, given))} is not" if given else "no"
        sr.problem("", f"{what} a latency objective: give one of {', '.join(stats)}",
                   "e.g. sla: {p99: 5ms}")
        return None
    stat = str(given[0])
    value = sr.raw(stat)
    try:
        limit = _latency(value)
    except ValueError as exc:
        sr.problem(stat, str(exc))
        return None
    sr.finish()
    return Sla(stat, limit, probes)


def stage(params: Params) -> int:
    """Order within a round: saturation (and every run of no curve) 0, steps 1, probe k
    1 + k. A step needs its round's saturation, a probe the steps and earlier probes."""
    value = params.get("load")
    if value is None or value == SATURATION:
        return 0
    index = probe_index(value)
    return 1 if index is None else 1 + index


def describe_step(value: Scalar) -> str:
    """How `volbench plan` shows a step whose rate is not known yet."""
    if value == SATURATION:
        return "unthrottled (measures the saturation rate)"
    index = probe_index(value)
    if index is not None:
        return f"SLA probe {index}: the middle of the bracket the earlier runs left"
    fraction = step_fraction(value)
    if fraction is not None:
        return f"{value} of the saturation rate measured in this round"
    return f"{value}/s"
