"""The experiment's `steady:` rule within one fio run (`within: run`), with fio's own
steady-state detection (fio's `steadystate`, `ss_dur`, `ss_ramp` options).

fio samples the job's IOPS and bandwidth once a second, and after `ss_ramp` seconds checks
the last `ss_dur` samples against one criterion; once it holds, the job stops (else it
runs to its runtime). fio takes exactly one criterion per job:

- `iops` / `bw`: every sample within a limit of the window's mean (max deviation);
- `iops_slope` / `bw_slope`: the least-squares slope, per second, as a share of the mean.

The SNIA rule volbench applies has two: the range (max - min) within `range` of the mean
AND the best-fit line moving at most `slope` of the mean across the window. They cannot
both go to fio, so fio gets the slope one, translated exactly: SNIA's excursion across
the window is |slope per second| x (window - 1), so fio's limit per second is
slope / (window - 1), e.g. 10 % over a 5 s window is `iops_slope:2.5%`. The range half
is checked by volbench on the window fio stopped on (its JSON lists that window's
samples): a run is steady within the run (`steady_run` = 1) when fio found its slope
criterion met AND that window's range is within `range` (judged by the report, which
knows the rule; the run stores what fio said and what the window was). The slope rather than the
deviation goes to fio because the deviation criterion is the range rule only up to a
factor of 2 either way (a deviation limit d allows a range of up to 2d), while the slope
translation is exact.

Metrics (tags of the job): `ss_attained` (fio's verdict on its slope criterion, 1 or 0),
`ss_range` and `ss_slope` (the SNIA range of the means of 5 parts of fio's last window,
and its least-squares excursion, % of its mean: levels, not raw seconds, issue 21),
`ss_drift` (1 when that window's level drifts beyond its noise: stats.steady.level_check),
`ss_noise_range` and `ss_smallest_drift` (what the window's noise allows: the range of part
means noise alone reaches, the smallest drift it could call one; % of the mean) and, when
attained, `ss_seconds` (the run's length: fio stopped there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volbench.config.steady import SS_ATTAINED as ATTAINED
from volbench.config.steady import SS_DRIFT as DRIFT
from volbench.config.steady import SS_NOISE_RANGE as NOISE_RANGE
from volbench.config.steady import SS_RANGE as RANGE
from volbench.config.steady import SS_SECONDS as SECONDS
from volbench.config.steady import SS_SLOPE as SLOPE
from volbench.config.steady import SS_SMALLEST_DRIFT as SMALLEST_DRIFT
from volbench.config.steady import SteadySpec, fio_slope_limit
from volbench.core.model import Metric
from volbench.stats.steady import level_check


def options(spec: SteadySpec | None) -> list[tuple[str, str]]:
    """fio options for `steady: {within: run}` (none otherwise)."""
    if spec is None or not spec.in_run:
        return []
    out = [("steadystate", f"{spec.metric}_slope:{fio_slope_limit(spec) * 100:.6g}%"),
           ("ss_dur", f"{spec.window}s")]
    if spec.ramp > 0:
        out.append(("ss_ramp", f"{spec.ramp:g}s"))
    return out


def _kind(criterion: str) -> str:
    """'iops_slope:2.5%' -> 'iops'."""
    return criterion.split(":", 1)[0].split("_", 1)[0]


def metrics(job: Mapping[str, Any], tags: Mapping[str, str]) -> list[Metric]:
    """The steady-state section of one job of fio's JSON as metrics ([] without one)."""
    ss = job.get("steadystate")
    if not isinstance(ss, Mapping):
        return []
    attained = bool(int(ss.get("attained", 0)))
    samples = [float(v) for v in ss.get("data", {}).get(_kind(str(ss.get("ss", ""))), [])]
    out = [Metric(ATTAINED, 1.0 if attained else 0.0, "", dict(tags))]
    check = level_check(samples)
    if check is not None:
        out += [Metric(RANGE, check.range_share * 100, "%", dict(tags)),
                Metric(SLOPE, check.slope_share * 100, "%", dict(tags)),
                Metric(DRIFT, 1.0 if check.drifting else 0.0, "", dict(tags)),
                Metric(NOISE_RANGE, check.noise_range * 100, "%", dict(tags)),
                Metric(SMALLEST_DRIFT, check.smallest_drift * 100, "%", dict(tags))]
    if attained:
        out.append(Metric(SECONDS, float(job["job_runtime"]) / 1000, "s", dict(tags)))
    return out

