"""Bursts and warm-ups in the report: what each case did over time, and what is judged.

A run that bursts (or warms up) carries, beside its whole-run metrics, the same metrics
per window (`window` = burst | warmup | sustained) and `burst_seconds` / `warmup_seconds`
(volbench.stats.windows). Here:

- `on_sustained(runs)`: the runs as the verdicts see them — a whole-run metric replaced by
  its sustained window where the run has one (a flat run is sustained throughout), so a
  disk is judged on the level it keeps, not on how much of its burst fit into the run;
- `agrees` / `agreed`: whether a case's runs tell one story (the lines in words are
  report/timestory.py's);
- `ended_inside`: a flat run measured at another run's burst (or warm-up) level on the
  same case: it never left that window, and the warning says how long a run must be;
- `refills`: burst lengths that differ run to run: the credit bucket refilled in the
  pauses between runs (interleaving), which is why the whole-run means drift.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volbench.core import metricinfo
from volbench.core.model import (
    Metric,
    Params,
    Parsed,
    RunResult,
    Status,
    canonical_json,
    params_key,
)
from volbench.core.units import format_value
from volbench.report.checks import ReportWarning, describe_case
from volbench.stats.changepoint import MIN_CHANGE, regimes

WINDOW = "window"
SECONDS = {"burst_seconds": "burst", "warmup_seconds": "warmup"}
# The rate a line is told in, best first (the one the detector decided on).
RATES = ("iops", "tps", "bw")
# A flat run within this share of another run's early level never left that window.
SAME_LEVEL = 0.10
# Burst lengths further apart than this (max / min) are a refilling bucket, not noise.
REFILL_SPREAD = 1.3
# Several runs tell a story (bursty, warms up) only when more than half of them show the
# same kind of window (or ended inside it) at lengths within this factor of each other.
AGREE_SPREAD = 3.0
# Pauses this much longer count as longer (refill evidence).
PAUSE_MARGIN = 1.1

CaseOp = tuple[str, str, str, str]  # target, workload, params key, op


@dataclass(frozen=True)
class RunRegime:
    """One run's early window (burst or warm-up) against its sustained level, with the
    levels' intervals within the run when its series still gives the same window."""

    index: int  # position in the runs
    kind: str
    seconds: float
    metric: str
    unit: str
    early: float
    sustained: float
    early_ci: tuple[float, float] | None = None
    sustained_ci: tuple[float, float] | None = None


def _key(run: RunResult, op: str) -> CaseOp:
    return (run.target, run.workload, params_key(run.params), op)


def _regime(index: int, run: RunResult, seconds: Metric) -> RunRegime | None:
    kind = SECONDS[seconds.name]
    tags = {k: v for k, v in seconds.tags.items()}
    levels: dict[tuple[str, str], tuple[float, str]] = {}
    for m in run.metrics:
        window = m.tags.get(WINDOW)
        if window is None or m.value is None:
            continue
        if {k: v for k, v in m.tags.items() if k != WINDOW} == tags:
            levels[(m.name, window)] = (float(m.value), m.unit)
    for name in RATES:
        if (name, kind) in levels and (name, "sustained") in levels:
            early, unit = levels[(name, kind)]
            cis = _intervals(run, name, tags, kind)
            return RunRegime(index, kind, float(seconds.value or 0.0), name, unit, early,
                             levels[(name, "sustained")][0], *cis)
    return None


def _intervals(run: RunResult, name: str, tags: Mapping[str, str], kind: str
               ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The early and sustained levels' intervals within the run (stats.arnoise), from
    its stored series, when the detector finds the same kind of window there again."""
    for s in run.parsed.series:
        if s.name == name and dict(s.tags) == dict(tags) and s.points:
            found = regimes([v for _, v in s.points])
            if found.kind == kind:
                return found.early_interval, found.sustained_interval
    return None, None


def run_regimes(runs: Sequence[RunResult]) -> dict[CaseOp, list[RunRegime]]:
    """Burst/warm-up windows of the measured runs, by case and operation."""
    found: dict[CaseOp, list[RunRegime]] = {}
    for index, run in enumerate(runs):
        if run.status is not Status.OK or run.warmup:
            continue
        for m in run.metrics:
            if m.name in SECONDS and m.value is not None:
                regime = _regime(index, run, m)
                if regime is not None:
                    found.setdefault(_key(run, m.tags.get("op", "")), []).append(regime)
    return found


def _tags_key(tags: Mapping[str, str]) -> str:
    return canonical_json({k: v for k, v in tags.items() if k != WINDOW})


def on_sustained(runs: Sequence[RunResult]) -> list[RunResult] | None:
    """The runs with each whole-run metric replaced by its sustained window, where there is
    one, and the window metrics left out; None when no run has windows.

    A comparable metric of a windowed operation that has no window of its own (latency
    percentiles other than fio's p99) is left out too: its whole-run figure mixes burst
    and sustained; the time line names it (report/timestory.py). Only cases whose
    runs agree on their windows (agrees) are judged on sustained levels; the others on
    whole-run means, their window metrics left out all the same."""
    out: list[RunResult] = []
    changed = False
    told = agreed(runs)
    for run in runs:
        sustained = {(m.name, _tags_key(m.tags)): m for m in run.metrics
                     if m.tags.get(WINDOW) == "sustained"
                     and _key(run, m.tags.get("op", "")) in told}
        if not sustained and not any(WINDOW in m.tags or m.name in SECONDS
                                     for m in run.metrics):
            out.append(run)
            continue
        changed = True
        windowed = {m.tags.get("op", "") for m in sustained.values()}
        metrics = tuple(
            dataclasses.replace(m, value=sustained[(m.name, _tags_key(m.tags))].value)
            if (m.name, _tags_key(m.tags)) in sustained else m
            for m in run.metrics
            if _kept(m, sustained, windowed)
        )
        parsed = Parsed(metrics, run.parsed.series, run.parsed.histograms)
        out.append(dataclasses.replace(run, parsed=parsed))
    return out if changed else None


def _kept(m: Metric, sustained: Mapping[tuple[str, str], Metric], windowed: set[str]) -> bool:
    if WINDOW in m.tags or m.name in SECONDS:
        return False
    return ((m.name, _tags_key(m.tags)) in sustained
            or m.tags.get("op", "") not in windowed
            or not metricinfo.comparable(m.name, m.unit, m.tags))


@dataclass(frozen=True)
class TimeLine:
    target: str
    workload: str
    params: Params
    text: str


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _label(run: RunResult, labels: Mapping[str, list[str]]) -> str:
    shown = labels.get(run.workload, [])
    return " ".join(f"{k}={run.params[k]}" for k in shown if k in run.params)


def _runs_of(runs: Sequence[RunResult], key: CaseOp) -> list[int]:
    return [i for i, r in enumerate(runs)
            if r.status is Status.OK and not r.warmup and _key(r, key[3])[:3] == key[:3]]


def _majority(found: Sequence[RunRegime]) -> list[RunRegime]:
    """The runs of the commonest kind of window (burst before warm-up on a tie)."""
    bursts = [r for r in found if r.kind == "burst"]
    warms = [r for r in found if r.kind != "burst"]
    return bursts if len(bursts) >= len(warms) else warms


def agrees(runs: Sequence[RunResult], key: CaseOp, found: Sequence[RunRegime]) -> bool:
    """Whether a case's runs tell one story: a single run, its detector decided; several,
    more than half show the same kind of window (or ended inside it: see _inside), at
    lengths within AGREE_SPREAD of each other or at the same levels (within SAME_LEVEL: a
    bucket that refilled more or less in the pauses). Otherwise the windows are the
    per-second noise of a busy host, and the case is judged on whole-run means.

    A majority of runs that each show the window can only lower the per-run false rate
    (p at most 5 %: 3p^2 - 2p^3 with 3 runs). Before issue 32, flat runs within 10 % of one
    false window's early level counted as "ended inside" it, and flat cases of 30 s runs
    got a story in 10-13 % (3 and 5 runs) where single runs did in 6-7 %."""
    total = _runs_of(runs, key)
    if len(total) <= 1:
        return bool(found)
    same = _majority(found)
    lengths = [r.seconds for r in same]
    if min(lengths) <= 0:
        return False
    # A bucket refilling in the pauses gives bursts of any length at the same levels.
    if max(lengths) / min(lengths) > AGREE_SPREAD and not _same_levels(same):
        return False
    return 2 * (len(same) + len(_inside(runs, key, same))) > len(total)


def agreed(runs: Sequence[RunResult]) -> dict[CaseOp, list[RunRegime]]:
    """run_regimes of the cases whose runs agree (see agrees), each with its majority."""
    return {key: _majority(found) for key, found in run_regimes(runs).items()
            if agrees(runs, key, found)}


def _inside(runs: Sequence[RunResult], key: CaseOp,
            found: Sequence[RunRegime]) -> list[tuple[int, float]]:
    """(index, level) of the case's flat runs that ended inside the windows: no longer
    than the longest window (a longer run would have seen it end), at the early level
    (within SAME_LEVEL) and clearly not at the sustained one (MIN_CHANGE or more from
    it, nearer the early level). A flat run as long as the others cannot have ended
    inside a window they left: on a flat disk, whose runs are alike, this never counts."""
    ref = found[0]
    early = _median([r.early for r in found])
    sustained = _median([r.sustained for r in found])
    longest = max(r.seconds for r in found)
    out = []
    for index in _runs_of(runs, key):
        if any(r.index == index for r in found):
            continue
        level = _flat_level(runs[index], ref.metric, key[3])
        if level is None or _length(runs[index], ref.metric, key[3]) > longest:
            continue
        near = abs(level - early) <= SAME_LEVEL * early
        apart = (abs(level - sustained) >= MIN_CHANGE * max(level, sustained)
                 and abs(level - sustained) > abs(level - early))
        if near and apart:
            out.append((index, level))
    return out


def _length(run: RunResult, metric: str, op: str) -> float:
    """Seconds the run's per-second series of `metric` covers (its duration without one)."""
    for s in run.parsed.series:
        if s.name == metric and s.tags.get("op", "") == op and s.points:
            return len(s.points)
    return run.duration


def level_text(value: float, unit: str) -> str:
    """2,480 IOPS, 1,020 tps, 60 MiB/s."""
    names = {"op/s": "IOPS", "tx/s": "tps"}
    return f"{value:,.0f} {names[unit]}" if unit in names else format_value(value, unit)


def _flat_level(run: RunResult, metric: str, op: str) -> float | None:
    for m in run.metrics:
        if (m.name == metric and m.tags.get("op", "") == op and WINDOW not in m.tags
                and m.value is not None and set(m.tags) <= {"op"}):
            return float(m.value)
    return None


def ended_inside(runs: Sequence[RunResult], regimes: Mapping[CaseOp, list[RunRegime]],
                 labels: Mapping[str, list[str]]) -> list[ReportWarning]:
    """Flat runs of a bursting (warming) case measured at the early level: they ended inside
    the window, and their whole-run figure is the burst, not the disk's sustained level."""
    out = []
    for key, found in regimes.items():
        if not agrees(runs, key, found):
            continue  # no story, no advice
        found = _majority(found)
        ref = found[0]
        longest = max(r.seconds for r in found)
        inside = _inside(runs, key, found)
        if not inside:
            continue
        index, level = inside[0]
        run = runs[index]
        length = run.ended - run.started
        word = "burst" if ref.kind == "burst" else "warm-up"
        out.append(ReportWarning(
            "time-window",
            f"{describe_case(run.target, run.workload, _label(run, labels))}: {len(inside)} "
            f"run(s) ended inside the {word} (e.g. rep {run.repetition}: "
            f"{level_text(level, ref.unit)} for its whole {length:.0f} s); other runs "
            f"left it after up to {longest:.0f} s for "
            f"{level_text(_median([r.sustained for r in found]), ref.unit)} sustained: "
            f"run longer than {longest * 1.5 + 10:.0f} s (runtime) to see the sustained level",
            run.target, run.workload, run.params, ref.metric, tuple(i for i, _ in inside)))
    return out


def refills(runs: Sequence[RunResult], regimes: Mapping[CaseOp, list[RunRegime]],
            labels: Mapping[str, list[str]]) -> list[ReportWarning]:
    """Burst lengths that differ from run to run, where the data say it is a bucket: the
    runs agree (agrees), the bursts hold the same levels (within SAME_LEVEL), and the
    longer the pause before a run (on its target), the longer its burst (no pair of runs
    says otherwise, and at least one says so)."""
    out = []
    for key, found in regimes.items():
        bursts = [r for r in found if r.kind == "burst"]
        if len(bursts) < 2 or not agrees(runs, key, found):
            continue
        lengths = [r.seconds for r in bursts]
        if min(lengths) <= 0 or max(lengths) / min(lengths) < REFILL_SPREAD:
            continue
        if not (_same_levels(bursts) and _follows_pauses(runs, bursts)):
            continue
        run = runs[bursts[0].index]
        listed = ", ".join(f"{s:.0f} s" for s in lengths)
        out.append(ReportWarning(
            "burst-refill",
            f"{describe_case(run.target, run.workload, _label(run, labels))}: the burst lasted "
            f"{listed} in run order: a credit bucket refilling in the pauses between runs "
            "(the longer the pause, the longer the next burst), not noise; whole-run means "
            "drift with it, so the verdicts compare the sustained level",
            run.target, run.workload, run.params, bursts[0].metric,
            tuple(r.index for r in bursts)))
    return out


def _same_levels(found: Sequence[RunRegime]) -> bool:
    early, sustained = _median([r.early for r in found]), _median([r.sustained for r in found])
    return all(abs(r.early - early) <= SAME_LEVEL * early
               and abs(r.sustained - sustained) <= SAME_LEVEL * sustained for r in found)


def _pause(runs: Sequence[RunResult], index: int) -> float:
    """Seconds the run's target rested before it (infinite for its first run)."""
    run = runs[index]
    ends = [r.ended for r in runs if r.target == run.target and r.ended <= run.started]
    return run.started - max(ends) if ends else math.inf


def _follows_pauses(runs: Sequence[RunResult], found: Sequence[RunRegime]) -> bool:
    pauses = {r.index: _pause(runs, r.index) for r in found}
    support = False
    for a in found:
        for b in found:
            if pauses[a.index] > PAUSE_MARGIN * pauses[b.index]:
                if a.seconds < b.seconds / REFILL_SPREAD:
                    return False  # a longer rest, a clearly shorter burst: not a bucket
                support = support or a.seconds >= b.seconds * REFILL_SPREAD
    return support

