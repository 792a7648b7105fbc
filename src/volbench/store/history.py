"""One case's headline metric over time and hosts, read from a store (`volbench history`).

A history line is one case (target, workload, parameters) and one metric with its tags,
followed across the experiments of one name or one `series:` key (a team re-runs the
same experiment file on new kernels, hosts, firmware). A target or workload with a
`series:` key of its own is matched by that key instead of its name, so renaming one
keeps its line. Each experiment gives a point: the median of its measured
runs with a 95 % interval of the mean. Between consecutive experiments whose runs'
fingerprints agree (except the fields the caller allows to change) the point gets a
verdict (stats/compare.py on the runs); when they differ, the fields that differ are
named instead. Over the whole line, stats/history.py finds the change points.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from volbench.config.fields import did_you_mean
from volbench.core.errors import StoreError
from volbench.core.metricinfo import HEADLINE, info
from volbench.core.model import ExperimentRow, Status, canonical_json
from volbench.stats import history as changes
from volbench.stats.compare import decide
from volbench.stats.summary import mean_interval
from volbench.store.db import Store


@dataclass(frozen=True)
class Filters:
    """Which experiments: by name, or by the experiment file's `series:` key (neither:
    the latest experiment's key, else its name), created at or after `since` (epoch
    seconds), on `host`, and runs whose fingerprint has `fingerprint`."""

    name: str | None = None
    since: float | None = None
    host: str | None = None
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    allow: Sequence[str] = ()  # fingerprint fields that may change between compared points
    series: str | None = None


@dataclass(frozen=True)
class Point:
    """One experiment on a history line: its measured runs' median and 95 % interval
    of the mean (None with one run), and how it compares with the point before."""

    experiment: int
    uuid: str
    host: str
    created: float
    runs: int
    median: float
    low: float | None
    high: float | None
    verdict: str  # better / worse / equivalent / inconclusive, "" for the first point
    ratio: float | None
    differs: tuple[tuple[str, Any, Any], ...]  # fingerprint fields that differ (no verdict)


@dataclass(frozen=True)
class Line:
    """One case and metric (with its tags) across experiments, oldest first, and the
    change points found over it (indices into `points`); `drift` is the lag-1
    autocorrelation between experiments the change points were tested against
    (stats.history.drift)."""

    case: str  # target / workload / params
    metric: str
    unit: str
    tags: Mapping[str, str]
    points: tuple[Point, ...]
    change_points: tuple[changes.ChangePoint, ...]
    drift: float


def _known(store: Store, filters: Filters) -> None:
    """The experiment name or series key asked for exists in the store."""
    found = store.experiments()
    if filters.name is not None and filters.name not in {r.name for r in found}:
        names = sorted({r.name for r in found})
        raise StoreError(f"no experiment named '{filters.name}' in {store.path}; "
                         + (did_you_mean(filters.name, names)
                            or f"experiments there: {', '.join(names) or 'none'}"))
    if filters.series is not None:
        keys = sorted({str(r[0]) for r in store.db.execute(
            "SELECT DISTINCT series FROM experiments") if r[0]})
        if filters.series not in keys:
            raise StoreError(f"no experiment with series: {filters.series} in {store.path}; "
                             + (did_you_mean(filters.series, keys)
                                or f"series keys there: {', '.join(keys) or 'none'}"))


def _experiments(store: Store, filters: Filters) -> list[tuple[ExperimentRow, str, str]]:
    rows = {int(r[0]): (str(r[1] or ""), str(r[2] or ""), str(r[3])) for r in store.db.execute(
        "SELECT id, uuid, host, series FROM experiments")}
    found = store.experiments()
    series, name = filters.series, filters.name
    if series is None and name is None and found:
        series = rows[found[-1].id][2] or None
        name = None if series else found[-1].name
    out = []
    for row in sorted(found, key=lambda r: (r.created, r.id)):
        uuid, host, key = rows[row.id]
        if (key != series if series is not None else row.name != name):
            continue
        if filters.since is not None and row.created < filters.since:
            continue
        if filters.host is not None and host != filters.host:
            continue
        out.append((row, uuid, host))
    return out


def _pick_metric(names: set[str], wanted: str | None) -> str | None:
    if wanted is not None:
        return wanted if wanted in names else None
    return next((n for n in HEADLINE if n in names), min(names) if names else None)


Values = dict[tuple[str, str, str], dict[int, list[float]]]  # (case, tags, unit) -> exp -> values


Labels = dict[int, dict[tuple[str, str], str]]  # experiment -> (kind, name) -> series key


Prints = dict[tuple[int, str], dict[str, Any]]  # (experiment, case) -> its runs' fingerprint


def case_labels(document: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """("target" or "workload", name) -> the `series:` key the experiment file gives
    that entry (entries without one are left out: they are matched by name)."""
    out: dict[tuple[str, str], str] = {}
    for kind in ("target", "workload"):
        entries = document.get(kind + "s")
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("series") and entry.get("name"):
                out[(kind, str(entry["name"]))] = str(entry["series"])
    return out


def _values(store: Store, experiments: list[int], metric: str, filters: Filters,
            labels: Labels) -> tuple[Values, Prints]:
    """Measured runs' values per line and experiment; the fingerprint of each case in
    each experiment (its first run's)."""
    prints = store.fingerprints(experiments)
    marks = ",".join("?" * len(experiments))
    exp_of = {int(r[0]): int(r[1]) for r in store.db.execute(
        f"SELECT id, experiment_id FROM runs WHERE experiment_id IN ({marks})", experiments)}
    values: Values = {}
    fingerprint_of: Prints = {}
    # One read for all experiments: a read per experiment cost 20 ms each (1 000: 20 s).
    for run in store.runs(experiments, metric_names={metric}):
        if run.status is not Status.OK or run.warmup:
            continue
        run_id = int(run.annotations["run_id"])
        exp = exp_of[run_id]
        fp = prints.get(run_id, {})
        if any(str(fp.get(k)) != v for k, v in filters.fingerprint.items()):
            continue
        known = labels.get(exp, {})
        case = (f"{known.get(('target', run.target), run.target)} / "
                f"{known.get(('workload', run.workload), run.workload)} / "
                f"{canonical_json(dict(run.params))}")
        # Per case, not per experiment: in a multi-target experiment each target has its
        # own device, firmware and filesystem, and a line must be compared on its own.
        fingerprint_of.setdefault((exp, case), fp)
        for m in run.metrics:
            if m.name == metric and m.value is not None:
                key = (case, canonical_json(dict(m.tags)), m.unit)
                values.setdefault(key, {}).setdefault(exp, []).append(m.value)
    return values, fingerprint_of


def _ratio(candidate: list[float], baseline: list[float]) -> float | None:
    """candidate / baseline as compare reports it: geometric means when all are positive."""
    if all(v > 0 for v in candidate + baseline):
        return math.exp(statistics.fmean(map(math.log, candidate))
                        - statistics.fmean(map(math.log, baseline)))
    base = statistics.fmean(baseline)
    return statistics.fmean(candidate) / base if base else None


def build(store: Store, filters: Filters, metric: str | None = None) -> list[Line]:
    """Every history line of the chosen experiments (see the module doc). A name, series
    key or metric that nothing in the store has is a StoreError naming it and what there
    is (it used to read as "no measured runs match", exit 0)."""
    _known(store, filters)
    chosen = _experiments(store, filters)
    ids = [row.id for row, _, _ in chosen]
    names = {n for n, _ in store.metric_kinds(ids)}
    if metric is not None and ids and metric not in names:
        shown = sorted(names)
        listed = ", ".join(shown[:12]) + (f" … ({len(shown)} in all)" if len(shown) > 12
                                          else "")
        raise StoreError(f"no metric '{metric}' in the experiments followed; "
                         + (did_you_mean(metric, shown) or f"metrics there: {listed or 'none'}"))
    name = _pick_metric(names, metric) if ids else None
    if name is None:
        return []
    labels = {row.id: case_labels(row.document) for row, _, _ in chosen}
    values, prints = _values(store, ids, name, filters, labels)
    lines = []
    for (case, tags, unit), by_exp in sorted(values.items()):
        better = info(name, unit).higher_is_better
        points: list[Point] = []
        previous: list[float] | None = None
        for row, uuid, host in chosen:
            vals = by_exp.get(row.id)
            if not vals:
                continue
            differs: tuple[tuple[str, Any, Any], ...] = ()
            verdict, ratio = "", None
            if previous is not None:
                before = prints.get((points[-1].experiment, case), {})
                differs = tuple(changes.differences(before, prints.get((row.id, case), {}),
                                                    filters.allow))
                if not differs:
                    # decide(): compare's verdict without its runs-needed search (40 ms
                    # a pair, 40 s for a history of 1 000).
                    verdict = str(decide(vals, previous, higher_is_better=better is not False))
                    ratio = _ratio(vals, previous)
            interval = mean_interval(vals) if len(vals) > 1 else None
            low, high = (interval.low, interval.high) if interval else (None, None)
            points.append(Point(row.id, uuid, host, row.created, len(vals),
                                statistics.median(vals), low, high, verdict, ratio, differs))
            previous = vals
        medians = [p.median for p in points]
        found = changes.change_points(medians)
        lines.append(Line(case, name, unit, json.loads(tags), tuple(points), tuple(found),
                          changes.drift(medians, [c.index for c in found])))
    return lines
