"""What a careful reader must be told before trusting the numbers.

Each check turns facts already in the results into warnings that say what to do:
failed runs and targets, too few runs, outliers (flagged, never dropped), drift across
repetitions, stalls within a run, caches that were not dropped, and runs where the
devices did far less I/O than the workload reported ("measured the page cache").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from volbench.core import metricinfo as metrics
from volbench.core.model import Params, RunResult, Series, Status, TargetRow
from volbench.core.units import format_size, format_value
from volbench.report.cases import MIN_RUNS, CaseSummary
from volbench.stats import Stall, StatisticsInputError, outlier_cutoff, stalls
from volbench.stats.windows import LATENCY_SERIES

# The devices must have moved at least this share of the workload's bytes; below it the
# page cache (or another cache) answered. Writes may legitimately be more (journal,
# metadata, parity), so only "far less" is flagged.
DEVICE_SHARE = 0.5
# Workload I/O below this is too small to judge (a metadata-only run).
MIN_CHECKED_BYTES = 1024 * 1024
STALL_FRACTION = 0.1
STALL_SECONDS = 1.0
MAX_LISTED = 5


@dataclass(frozen=True)
class ReportWarning:
    kind: str  # failed-target, failed-runs, few-runs, outlier, drift, drift-untested, stall,
    # cache, caches
    message: str
    target: str = ""
    workload: str = ""
    params: Params = field(default_factory=dict)
    metric: str = ""
    runs: tuple[int, ...] = ()  # positions in Report.runs

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "target": self.target,
            "workload": self.workload,
            "params": dict(self.params),
            "metric": self.metric,
            "runs": [i + 1 for i in self.runs],
        }


@dataclass(frozen=True)
class IoCheck:
    """Bytes the workload reported vs bytes the target's devices did, per direction."""

    tool: Mapping[str, float]
    device: Mapping[str, float]
    # Directions where the devices did far less than the workload ("read", "write").
    short: tuple[str, ...]

    def share(self, op: str) -> float | None:
        tool = self.tool.get(op, 0.0)
        return self.device.get(op, 0.0) / tool if tool >= MIN_CHECKED_BYTES else None


@dataclass(frozen=True)
class SeriesStalls:
    series: Series
    stalls: tuple[Stall, ...]


def describe_case(target: str, workload: str, label: str) -> str:
    return " ".join(p for p in (target, workload, label) if p)


# -- targets and runs --------------------------------------------------------------------


def failures(runs: Sequence[RunResult], targets: Sequence[TargetRow]) -> list[ReportWarning]:
    out = []
    for t in targets:
        if t.status == "failed":
            out.append(
                ReportWarning(
                    "failed-target",
                    f"target {t.name} could not be built: {t.error}; "
                    "it is missing from every comparison",
                    target=t.name,
                )
            )
    # A failed run that `run --retry-failed` ran again and that then finished OK is
    # kept in the database (nothing is lost) but is no longer a gap in the results.
    failed = [(i, r) for i, r in enumerate(runs) if r.status is not Status.OK]
    # Only when a run failed: a case key is canonical JSON, 1 s for 100 000 runs.
    redone = {(r.case_key, r.repetition, r.warmup) for r in runs
              if r.status is Status.OK} if failed else set()
    bad, retried = [], 0
    for i, r in failed:
        if (r.case_key, r.repetition, r.warmup) in redone:
            retried += 1
        else:
            bad.append((i, r))
    if retried:
        out.append(
            ReportWarning(
                "retried-runs",
                f"{retried} failed run(s) were run again (run --retry-failed) and then "
                "finished OK; the results use the OK runs, the failed attempts and their "
                "raw output stay in the database",
            )
        )
    if bad:
        kinds: dict[str, int] = {}
        for _, r in bad:
            kinds[str(r.status)] = kinds.get(str(r.status), 0) + 1
        counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        listed = "; ".join(
            f"#{i + 1} {r.target} {r.workload} rep {r.repetition}: {r.error or r.status}"
            for i, r in bad[:MAX_LISTED]
        )
        more = f"; and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
        out.append(
            ReportWarning(
                "failed-runs",
                f"{len(bad)} run(s) did not finish OK ({counts}): {listed}{more}. "
                "They are left out of every statistic; their raw output is in the database",
                runs=tuple(i for i, _ in bad),
            )
        )
    return out


def few_runs(counts: Mapping[tuple[str, str, str], int]) -> list[ReportWarning]:
    short = {k: n for k, n in counts.items() if n < MIN_RUNS}
    if not short:
        return []
    low, high = min(short.values()), max(short.values())
    runs = f"{low}" if low == high else f"{low}–{high}"
    return [
        ReportWarning(
            "few-runs",
            f"{len(short)} of {len(counts)} case(s) have only {runs} measured run(s), "
            f"fewer than {MIN_RUNS}: intervals are missing or wide and comparisons stay "
            "inconclusive; repeat more (volbench run --runs 5, or repeat: {min: 3, max: 20, "
            "until: decided})",
        )
    ]


# -- per case: outliers and drift --------------------------------------------------------


def case_checks(
    summaries: Sequence[CaseSummary], labels: Mapping[str, list[str]]
) -> list[ReportWarning]:
    out = []
    for s in summaries:
        if not metrics.comparable(s.metric, s.unit, s.tags):
            continue
        where = describe_case(s.target, s.workload, case_text(s, labels))
        name = metric_text(s)
        cutoff = outlier_cutoff(len(s.values))
        for index, z in s.outliers:
            if s.values[index] == 0.0 and s.unit in ("op/s", "tx/s", "B/s"):
                continue  # a run that completed nothing: report/readable.py says so
            out.append(
                ReportWarning(
                    "outlier",
                    f"{where}: {name} of run {index + 1} of {len(s.values)} "
                    f"(rep {s.repetitions[index]}, {format_value(s.values[index], s.unit)}) is an "
                    f"outlier (modified z-score {z:.1f}, cut-off {cutoff:.1f}"
                    f" for {len(s.values)} runs); it is kept in every statistic — check "
                    "that run's raw output and what else ran on the machine",
                    s.target,
                    s.workload,
                    s.params,
                    s.metric,
                    (s.run_indices[index],),
                )
            )
        d = s.drift
        if d is not None and d.flagged and d.change is not None:
            way = "rises" if d.change > 0 else "falls"
            out.append(
                ReportWarning(
                    "drift",
                    f"{where}: {name} {way} run after run (second half "
                    f"{d.change * 100:+.1f} % vs first, Spearman ρ = {d.rho:.2f}, p = "
                    f"{d.p_value:.3f}, {d.n} runs): caches warming, a filling device or a "
                    "neighbour; add warm-up rounds (warmup: 1) and interleave the order",
                    s.target,
                    s.workload,
                    s.params,
                    s.metric,
                    s.run_indices,
                )
            )
    return [*out, *_drift_untested(summaries)]


def _drift_untested(summaries: Sequence[CaseSummary]) -> list[ReportWarning]:
    """Say when drift could not be tested, so that no warning never reads as "no drift".

    Spearman's exact test cannot reach p < 0.05 with 3 runs (smallest p 1/3) or 4 (1/12).
    """
    untested = [
        s
        for s in summaries
        if s.drift is not None
        and not s.drift.testable
        and metrics.comparable(s.metric, s.unit, s.tags)
    ]
    if not untested:
        return []
    ns = sorted({s.drift.n for s in untested if s.drift is not None})
    runs = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    smallest = min(s.drift.smallest_p for s in untested if s.drift is not None)
    return [
        ReportWarning(
            "drift-untested",
            f"drift not testable with {runs} runs: in {len(untested)} case(s) even a steady "
            f"rise or fall could not reach p < 0.05 (smallest possible p {smallest:.3f}); "
            "5 runs per case make it testable",
        )
    ]


def case_text(s: CaseSummary, labels: Mapping[str, list[str]]) -> str:
    shown = labels.get(s.workload, [])
    return " ".join(f"{k}={s.params[k]}" for k in shown if k in s.params)


def metric_text(s: CaseSummary) -> str:
    extra = " ".join(p for p in (s.op, s.other_tags()) if p)
    return f"{s.metric} {extra}".strip()


# -- per run: did the disk do the work? ------------------------------------------------------


def tool_bytes(run: RunResult) -> dict[str, float]:
    """Bytes the workload says it moved, per direction (fio's io_bytes).

    Totals tagged job=all / host=all already sum the jobs; use them alone when present.
    """
    found = [m for m in run.metrics if m.name == "io_bytes"]
    if not found:
        return {}
    totals = [m for m in found if "all" in (m.tags.get("job"), m.tags.get("host"))]
    out: dict[str, float] = {}
    for m in totals or found:
        op = m.tags.get("op", "")
        if op in ("read", "write") and m.value is not None:
            out[op] = out.get(op, 0.0) + float(m.value)
    return out


def io_check(run: RunResult) -> IoCheck | None:
    device = run.annotations.get("device_io")
    if not isinstance(device, Mapping):
        return None
    tool = tool_bytes(run)
    if not tool:
        return None
    seen = {op: float(device.get(f"{op}_bytes", 0) or 0) for op in ("read", "write")}
    short = tuple(
        op
        for op, moved in tool.items()
        if moved >= MIN_CHECKED_BYTES and seen[op] < DEVICE_SHARE * moved
    )
    return IoCheck(tool, seen, short)


def cache_warnings(
    runs: Sequence[RunResult],
    checks: Mapping[int, IoCheck],
    memory: int | None,
    labels: Mapping[str, list[str]],
) -> list[ReportWarning]:
    groups: dict[tuple[str, str, str], list[int]] = {}
    checked: dict[tuple[str, str, str], int] = {}
    for index, check in checks.items():
        run = runs[index]
        key = (run.target, run.workload, _label(run, labels))
        checked[key] = checked.get(key, 0) + 1
        if check.short:
            groups.setdefault(key, []).append(index)
    out = []
    for key, indices in groups.items():
        target, workload, label = key
        run = runs[indices[0]]
        check = checks[indices[0]]
        op = check.short[0]
        share = check.device[op] / check.tool[op]
        total = checked[key]
        out.append(
            ReportWarning(
                "cache",
                f"{describe_case(target, workload, label)}: in {len(indices)} of {total} "
                f"run(s) the devices did far less I/O than the workload (e.g. {op}s: "
                f"{share * 100:.0f} % of {format_size(check.tool[op])}){_ram(run, memory)}: the "
                "result measures the page cache, not the disk; use direct I/O or a working set "
                "larger than RAM",
                target,
                workload,
                run.params,
                runs=tuple(indices),
            )
        )
    return out


def _ram(run: RunResult, memory: int | None) -> str:
    ws = run.annotations.get("working_set_bytes")
    if not isinstance(ws, int | float) or not memory:
        return ""
    fits = "fits in" if ws < memory else "exceeds"
    return f"; working set {format_size(ws)} {fits} RAM ({format_size(memory)})"


def _label(run: RunResult, labels: Mapping[str, list[str]]) -> str:
    shown = labels.get(run.workload, [])
    return " ".join(f"{k}={run.params[k]}" for k in shown if k in run.params)


def caches_not_dropped(runs: Sequence[RunResult]) -> list[ReportWarning]:
    reasons: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        why = run.annotations.get("caches")
        if why and run.status is Status.OK and not run.warmup:
            reasons.setdefault(str(why), []).append(i)
    return [
        ReportWarning(
            "caches",
            f"{len(idx)} measured run(s) started with warm caches: "
            f"{why}; first runs of a case may look faster than later ones",
            runs=tuple(idx),
        )
        for why, idx in reasons.items()
    ]


# -- stalls in time series ---------------------------------------------------------------


def run_stalls(run: RunResult) -> list[SeriesStalls]:
    found = []
    for s in run.parsed.series:
        # A stall is a rate that falls; latency falling is good news.
        if len(s.points) < 3 or s.name in LATENCY_SERIES:
            continue
        # Most series never fall below a tenth of their median: say so without the
        # checks and the scan (a fifth of a 100 000-run report's statistics). A series
        # with a NaN or an infinity finds no stall here either way (the scan refuses it).
        rates = [v for _, v in s.points]
        if min(rates) >= STALL_FRACTION * statistics.median(rates):
            continue
        try:
            spans = stalls(
                [t for t, _ in s.points],
                rates,
                fraction=STALL_FRACTION,
                min_seconds=STALL_SECONDS,
            )
        except StatisticsInputError:
            continue  # unordered or non-finite samples: nothing trustworthy to say
        if spans:
            found.append(SeriesStalls(s, tuple(spans)))
    return found


def stall_warnings(
    runs: Sequence[RunResult],
    found: Mapping[int, list[SeriesStalls]],
    labels: Mapping[str, list[str]],
) -> list[ReportWarning]:
    out = []
    for index, items in sorted(found.items()):
        run = runs[index]
        for item in items:
            longest = max(item.stalls, key=lambda st: st.duration)
            op = item.series.tags.get("op", "")
            out.append(
                ReportWarning(
                    "stall",
                    f"{describe_case(run.target, run.workload, _label(run, labels))} "
                    f"rep {run.repetition} (#{index + 1}): {item.series.name} {op} fell below "
                    f"{STALL_FRACTION * 100:g} % of its median {len(item.stalls)} time(s), longest "
                    f"{longest.duration:.1f} s (t = {longest.start:g}–{longest.end:g} s); the "
                    "mean hides it — see the time series",
                    run.target,
                    run.workload,
                    run.params,
                    item.series.name,
                    (index,),
                )
            )
    return out
