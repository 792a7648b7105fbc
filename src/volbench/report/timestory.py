"""The time line of a report: what each case did over time, in words, and what is judged.

- `time_lines`: one line per case whose runs agree on a burst or warm-up
  (report/timeline.py, `agrees`), with the levels' intervals and what the verdicts compare
  ("bursty read: 2,480 IOPS [2,450, 2,510] for 24 s, then 501 IOPS [498, 504] sustained;
  judged on the sustained window: iops, bw, lat_mean; not judged:
  clat_p999 (whole-run figures, mixing both windows)");
- `noisy_lines`: cases whose runs show windows but do not agree: no story, how noisy;
- `too_short`: runs whose series are shorter than the detector judges, said once.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from volbench.core import metricinfo
from volbench.core.model import RunResult, Status, params_key
from volbench.report.checks import describe_case
from volbench.report.timeline import (
    RATES,
    SECONDS,
    WINDOW,
    CaseOp,
    RunRegime,
    TimeLine,
    _label,
    _majority,
    _median,
    _runs_of,
    agrees,
    level_text,
    run_regimes,
)
from volbench.stats.changepoint import MIN_SECONDS, long_run_sigma
from volbench.stats.summary import mean_interval


def _noise(runs: Sequence[RunResult], key: CaseOp, metric: str) -> str:
    """The per-second series' spread and dependence over the case's runs (medians)."""
    cvs, phis = [], []
    for index in _runs_of(runs, key):
        for s in runs[index].parsed.series:
            values = [v for _, v in s.points]
            if s.name != metric or s.tags.get("op", "") != key[3] or len(values) < 5:
                continue
            mean = statistics.fmean(values)
            if mean > 0:
                cvs.append(statistics.stdev(values) / mean)
                phis.append(long_run_sigma([v - mean for v in values])[1])
    if not cvs:
        return ""
    return (f"; per-second {metric} varies {_median(cvs):.0%} (CV, median of the runs), "
            f"AR(1) {_median(phis):.2f}")


def noisy_lines(runs: Sequence[RunResult], labels: Mapping[str, list[str]]) -> list[TimeLine]:
    """Cases whose runs show windows but do not agree on them: no story, say how noisy."""
    out = []
    for key, found in run_regimes(runs).items():
        if agrees(runs, key, found):
            continue
        first = runs[found[0].index]
        total = len(_runs_of(runs, key))
        kinds = ", ".join(f"{'burst' if k == 'burst' else 'warm-up'} in {n}"
                          for k, n in sorted(_count(r.kind for r in found).items()))
        op = f" {key[3]}" if key[3] else ""
        text = (f"no burst or warm-up the runs agree on{op} ({kinds} of {total} runs, at "
                f"{', '.join(f'{r.seconds:.0f} s' for r in found)})"
                f"{_noise(runs, key, found[0].metric)}: compared on whole-run means")
        case = describe_case(first.target, first.workload, _label(first, labels))
        out.append(TimeLine(first.target, first.workload, first.params, f"{case}: {text}"))
    return out


def _count(items: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def time_lines(runs: Sequence[RunResult], regimes: Mapping[CaseOp, list[RunRegime]],
               labels: Mapping[str, list[str]]) -> list[TimeLine]:
    """"bursty: 2,480 IOPS [2,450, 2,510] for 24 s, then 501 IOPS [498, 504] sustained;
    judged on the sustained window: …" for each case whose runs agree; for the others,
    how noisy the per-second series is; and which runs were too short to judge."""
    out = []
    for key, found in regimes.items():
        if not agrees(runs, key, found):
            continue
        first = runs[found[0].index]
        same = _majority(found)
        kind = same[0].kind
        early, sustained = _levels(same, "early"), _levels(same, "sustained")
        seconds = _median([r.seconds for r in same])
        total = len(_runs_of(runs, key))
        share = "" if len(same) == total else f" (in {len(same)} of {total} runs)"
        word = "bursty" if kind == "burst" else "warms up"
        op = f" {key[3]}" if key[3] else ""
        text = (f"{word}{op}: {early} for {seconds:.0f} s, then {sustained} sustained{share}; "
                f"{_judged(runs, same, key[3])}")
        case = describe_case(first.target, first.workload, _label(first, labels))
        out.append(TimeLine(first.target, first.workload, first.params, f"{case}: {text}"))
    return out + noisy_lines(runs, labels) + too_short(runs, labels)


def _levels(same: Sequence[RunRegime], which: str) -> str:
    """A level with its 95 % interval: one run's from its seconds (stats.arnoise), three or
    more runs' the mean of their levels with the interval of that mean (run to run); two
    runs' mean and both levels (an interval from two values, Student's t with one degree
    of freedom, is twelve times their spread and says nothing)."""
    unit = same[0].unit
    values = [r.early if which == "early" else r.sustained for r in same]
    if len(same) == 2:
        return (f"{level_text(statistics.fmean(values), unit)} "
                f"({' and '.join(_number(level_text(v, unit)) for v in values)} in the two runs)")
    if len(same) == 1:
        centre = values[0]
        ci = same[0].early_ci if which == "early" else same[0].sustained_ci
    else:
        centre = statistics.fmean(values)
        found = mean_interval(values)
        ci = None if found is None else (found.low, found.high)
    text = level_text(centre, unit)
    if ci is None:
        return text
    low, high = (level_text(v, unit) for v in ci)
    shown = text.rsplit(" ", 1)[-1]
    if low.endswith(f" {shown}") and high.endswith(f" {shown}"):
        low, high = low[: -len(shown) - 1], high[: -len(shown) - 1]
    wide = " (too wide to read)" if ci[1] > 10 * ci[0] else ""
    return f"{text} [{low}, {high}]{wide}"


def _number(text: str) -> str:
    """"2,480" of "2,480 IOPS"."""
    return text.rsplit(" ", 1)[0]


def _judged(runs: Sequence[RunResult], same: Sequence[RunRegime], op: str) -> str:
    """What the verdicts compare for the runs with a window: the metrics they have a
    sustained window of, and the comparable ones they do not (left out of the verdicts:
    their whole-run figures mix both windows), named rather than dropped in silence."""
    judged: set[str] = set()
    mixed: set[str] = set()
    for r in same:
        run = runs[r.index]
        here = {m.name for m in run.metrics
                if m.tags.get(WINDOW) == "sustained" and m.tags.get("op", "") == op}
        judged |= here
        mixed |= {m.name for m in run.metrics
                  if WINDOW not in m.tags and m.tags.get("op", "") == op
                  and m.name not in here and m.name not in SECONDS
                  and metricinfo.comparable(m.name, m.unit, m.tags)}
    order = sorted(judged, key=metricinfo.rank)
    text = f"judged on the sustained window: {', '.join(order)}"
    if mixed:
        text += (f"; not judged: {', '.join(sorted(mixed, key=metricinfo.rank))} (whole-run "
                 "figures, mixing both windows)")
    return text


def too_short(runs: Sequence[RunResult], labels: Mapping[str, list[str]]) -> list[TimeLine]:
    """One line for the cases whose runs' per-second series are all shorter than the
    detector judges (stats.changepoint.MIN_SECONDS): no burst or warm-up was looked for,
    and the report says so rather than nothing."""
    lengths: dict[tuple[str, str, str], list[int]] = {}
    for run in runs:
        if run.status is not Status.OK or run.warmup:
            continue
        rates = [s for s in run.parsed.series if s.name in RATES and s.points]
        if rates:
            lengths.setdefault((run.target, run.workload, params_key(run.params)),
                               []).append(max(len(s.points) for s in rates))
    short = {k: v for k, v in lengths.items() if max(v) < MIN_SECONDS}
    if not short:
        return []
    seconds = sorted({n for v in short.values() for n in v})
    shown = ", ".join(f"{n}" for n in seconds[:3]) + (", …" if len(seconds) > 3 else "")
    first = next(r for r in runs if (r.target, r.workload, params_key(r.params)) in short)
    return [TimeLine(first.target, first.workload, first.params, (
        f"{len(short)} case(s) have per-second series of {shown} s: too short to judge "
        f"bursts or warm-ups (the detector's error rates hold from {MIN_SECONDS} s, "
        "docs/time.md); compared on whole-run means"))]
