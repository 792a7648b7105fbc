"""The experiment's `steady:` section: when a metric counts as steady over rounds.

    steady: {metric: iops, window: 5, range: 20%, slope: 10%}

The SNIA PTS rule (volbench.stats.steady): a window of `window` consecutive rounds whose
range stays within `range` of its mean and whose best-fit line moves at most `slope` of
it. The report says per case whether and from which round the rule held, and its verdicts
use the rounds from the steady window on (docs/time.md). Shares are written `20%` or
`0.2`.

    steady: {metric: iops, window: 30, range: 20%, slope: 10%, within: run, ramp: 5s}

`within: run` applies the rule inside each fio run instead, with fio's own steady-state
options (workloads/fiosteady.py): `window` is then in seconds (fio samples once a second),
`ramp` the seconds fio waits before it starts looking; fio stops the run once steady, or
at its runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader
from volbench.config.sections import Section, Value
from volbench.config.spec import Duration, Integer, Text
from volbench.stats.steady import RANGE, SLOPE, WINDOW

WITHIN = ("rounds", "run")
RUN = "run"
# Metrics fio can hold steady within a run (its `ss` criteria are on IOPS or bandwidth).
RUN_METRICS = ("iops", "bw")
MAX_RUN_WINDOW = 3600
# What a fio run with `within: run` records (workloads/fiosteady.py): fio's verdict on its
# slope criterion (1/0), the SNIA range and excursion of its last window (% of the mean),
# and when fio found it steady, the run's length (fio stopped there).
SS_ATTAINED = "ss_attained"
SS_RANGE = "ss_range"
SS_SLOPE = "ss_slope"
SS_SECONDS = "ss_seconds"
# 1 when the window's level drifts beyond its noise (stats.steady.level_check), else 0.
SS_DRIFT = "ss_drift"
# The range of part means the window's noise alone reaches in 1 % of flat windows, and the
# smallest drift the window could call one (% of the mean): what the window can tell.
SS_NOISE_RANGE = "ss_noise_range"
SS_SMALLEST_DRIFT = "ss_smallest_drift"
# Every figure a run with `within: run` stores: what a report must read of each run.
SS_METRICS = (SS_ATTAINED, SS_RANGE, SS_SLOPE, SS_SECONDS, SS_DRIFT, SS_NOISE_RANGE,
              SS_SMALLEST_DRIFT)
# A share as `share` below takes it (`volbench schema`).
# Written as a percentage: more than 0 (a digit other than 0) and below 100 (two digits).
SHARE = {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                   {"type": "string",
                    "pattern": r"^(?=[^1-9]*[1-9])\s*0*[0-9]?[0-9](\.[0-9]+)?\s*%\s*$"}]}
WITHIN_FIELD = Text("within", "rounds", choices=WITHIN,
                    help="rounds: the rule over each case's runs; run: inside each fio run")
METRIC = Text("metric", "iops", help="the metric held steady (within: run: iops or bw)")
WINDOW_FIELD = Integer("window", WINDOW, minimum=2, maximum=MAX_RUN_WINDOW,
                       help="rounds in the window (at most 100), or seconds with within: run")
RANGE_FIELD = Value("range", RANGE, value=SHARE,
                    help="the window's range stays within this share of its mean (20% or 0.2)")
SLOPE_FIELD = Value("slope", SLOPE, value=SHARE,
                    help="its best-fit line moves at most this share of the mean")
RAMP = Duration("ramp", 0.0, help="within: run: seconds fio waits before it looks")
STEADY = Section("steady", None, fields=(METRIC, WINDOW_FIELD, RANGE_FIELD, SLOPE_FIELD,
                                         WITHIN_FIELD, RAMP),
                 help="when a metric counts as steady (SNIA's rule; docs/time.md)")


@dataclass(frozen=True)
class SteadySpec:
    metric: str = "iops"
    window: int = WINDOW
    range: float = RANGE
    slope: float = SLOPE
    # "rounds": the rule over each case's runs; "run": within each fio run (fio's `ss`).
    within: str = "rounds"
    # Seconds fio waits before it collects steady-state samples (within: run only).
    ramp: float = 0.0

    @property
    def in_run(self) -> bool:
        return self.within == RUN


def fio_slope_limit(spec: SteadySpec) -> float:
    """fio's per-second slope limit (share of the mean) for SNIA's excursion limit across
    the window: |slope| x (window - 1) <= slope share."""
    return spec.slope / (spec.window - 1)


def steady_in_run(attained: float, range_pct: float | None, spec: SteadySpec,
                  drift: float = 0.0, noise_range_pct: float = 0.0) -> bool:
    """The whole rule for one run: fio's slope criterion held, its window's range (of
    part means) is within the experiment's limit or within what the window's noise alone
    makes (issue 32: a 5 s window of a flat device at CV 10 % spans more than 20 % half
    the time), and its level does not drift."""
    return (attained >= 1.0 and range_pct is not None
            and range_pct <= max(spec.range * 100, noise_range_pct) and drift < 1.0)


def share(value: Any) -> float:
    """`20%`, `20 %` or 0.2 -> 0.2; strictly between 0 and 1."""
    if isinstance(value, str) and value.strip().endswith("%"):
        number = float(value.strip()[:-1]) / 100.0
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        raise ValueError(f"expected a share such as 20% or 0.2, got {value!r}")
    if not 0.0 < number < 1.0:
        raise ValueError(f"expected a share between 0 and 100 % (exclusive), got {value!r}")
    return number


def _share(r: Reader, key: str, default: float) -> float:
    value = r.raw(key, None)  # read even when absent, so a misspelt key lists it as known
    if value is None:
        return default
    try:
        return share(value)
    except ValueError as exc:
        r.problem(key, str(exc), "write it as 20% or 0.2")
        return default


def parse(r: Reader) -> SteadySpec | None:
    """The top-level `steady:` section (`r` reads the whole document), or None."""
    if not r.has("steady"):
        return None
    sr = r.get(STEADY)
    within = sr.get(WITHIN_FIELD)
    in_run = within == RUN
    spec = SteadySpec(
        sr.get(METRIC),
        # The window's bound depends on `within`: the declaration states the larger one.
        sr.integer(WINDOW_FIELD.name, WINDOW, minimum=2,
                   maximum=MAX_RUN_WINDOW if in_run else 100),
        _share(sr, RANGE_FIELD.name, RANGE),
        _share(sr, SLOPE_FIELD.name, SLOPE),
        within,
        sr.get(RAMP),
    )
    if in_run and spec.metric not in RUN_METRICS:
        sr.problem("metric", f"within: run, fio holds {' or '.join(RUN_METRICS)} steady, "
                   f"not {spec.metric}", "use metric: iops or metric: bw")
    if sr.has("ramp") and not in_run:
        sr.problem("ramp", "only applies within a run", "add within: run, or remove ramp")
    if spec.ramp < 0:
        sr.problem("ramp", "must not be negative", "write it as 5s, or leave it out")
    sr.finish()
    return spec


def from_document(document: Mapping[str, Any]) -> SteadySpec | None:
    """The spec of a stored (already validated) document, for reports; None if absent or
    unreadable."""
    problems: list[Any] = []
    spec = parse(Reader(document, "", problems)) if isinstance(document, Mapping) else None
    return None if problems else spec
