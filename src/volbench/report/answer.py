"""The answer first: per workload, one line per target with its headline figure, the
figure's interval and the verdict against the baseline in words.

hyperfine ("`fd` ran 1.73 ± 0.05 times faster than `find`") and pyperf compare_to are
the model: the answer in words with its uncertainty, everything else one flag away
(`volbench report --details`, and the Markdown/HTML files, which keep it all).

The verdicts are report/verdicts.py's (this module only words them); the headline rule is
core/headline.py's. The figure shown per target is the geometric mean of its runs with a
Student-t interval on the log scale: the same centre the verdict's ratio uses, and an
interval that cannot go below zero for a rate, a bandwidth or a time.
"""

from __future__ import annotations

from dataclasses import dataclass

from volbench.core import metricinfo, syncmode
from volbench.core.headline import commit_rank, headline
from volbench.core.model import params_key
from volbench.core.units import format_value
from volbench.report import durability, noise, phaseview, readable
from volbench.report.cases import CaseSummary
from volbench.report.data import Report
from volbench.report.table import value_order
from volbench.report.verdicts import VerdictRow
from volbench.stats import Verdict
from volbench.stats.geometric import geometric_figure
from volbench.stats.windows import WINDOW_TAG

# The built-in default (4 targets x 2 workloads) must fit a terminal of this size.
MAX_LINES = 40
MAX_COLUMNS = 100
# A workload with more cases than this (a load curve's steps, a parameter sweep) shows
# the first ones and says how many more there are behind --details.
MAX_CASES_PER_WORKLOAD = 3
# The whole block (answers, a blank line, notes), leaving the terminal's header its lines.
BLOCK_LINES = MAX_LINES - 4
# Lines of "what matters most" under the answers.
MAX_NOTES = 4
# "~N more runs each would decide" only where N is a number a user would run; beyond it
# the interval ("between -41 % and +37 %") says more.
MAX_RUNS_ADVICE = 20


def figure_text(summary: CaseSummary) -> str:
    """"53.4k op/s [52.1k, 54.6k]": the figure and its interval, in the metric's unit."""
    fig = geometric_figure(summary.values)
    if fig is None:
        return "no runs"
    text = format_value(fig.centre, summary.unit)
    if fig.interval is None:
        stalled = len(readable.stalled(summary))
        if stalled:  # a run that completed nothing: the figure is an arithmetic mean
            return f"{text} ({stalled} of {len(summary.values)} runs stalled)"
        return f"{text} (1 run)" if len(summary.values) == 1 else text
    low, high = (format_value(v, summary.unit) for v in (fig.interval.low, fig.interval.high))
    # "53074 op/s [44606, 63150]": the unit once, where the bounds share the figure's.
    unit = text.rsplit(" ", 1)[-1] if " " in text else ""
    if unit and low.endswith(f" {unit}") and high.endswith(f" {unit}"):
        low, high = low[:-len(unit) - 1], high[:-len(unit) - 1]
    return f"{text} [{low}, {high}]"


def _times(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _pct(x: float) -> str:
    return f"{(x - 1.0) * 100.0:+.0f} %" if abs(x - 1.0) >= 0.1 else \
        f"{(x - 1.0) * 100.0:+.1f} %"


def verdict_words(row: VerdictRow) -> str:
    """The verdict in words, as a user reads it: "1.98× faster [1.90, 2.07]",
    "no difference beyond ±2 %", "not decided: between -41 % and +37 %"."""
    c = row.comparison
    if c is None:
        return f"not compared: {row.error}"
    if c.verdict is Verdict.EQUIVALENT:
        return f"no difference beyond ±{c.threshold * 100:g} %"
    ci = c.ratio_ci
    if c.verdict is Verdict.INCONCLUSIVE:
        if ci is None:
            return "not decided: too few runs for an interval"
        text = f"not decided: between {_pct(ci.low)} and {_pct(ci.high)}"
        more = None if c.runs_needed is None or not c.promises_runs else \
            max(1, c.runs_needed - min(c.n_candidate, c.n_baseline))
        if more is not None and more <= MAX_RUNS_ADVICE:
            text += f"; ~{more} more run{'s' if more > 1 else ''} each would decide"
        return text
    # "Faster" is the better direction whatever the metric: IOPS up, latency down.
    speed = c.ratio if c.higher_is_better else 1.0 / c.ratio
    bounds = sorted(b if c.higher_is_better else 1.0 / b
                    for b in ((ci.low, ci.high) if ci else ()))
    word = "faster" if c.verdict is Verdict.BETTER else "slower"
    if word == "slower":
        speed, bounds = 1.0 / speed, sorted(1.0 / b for b in bounds)
    tail = f" [{_times(bounds[0])}, {_times(bounds[1])}]" if bounds else ""
    return f"{_times(speed)}× {word}{tail}"


@dataclass(frozen=True)
class CaseAnswer:
    """One headline comparison group: a workload's case and metric, each target's
    summary in the experiment's target order and its verdict row (none for the baseline)."""

    workload: str
    title: str
    summaries: tuple[CaseSummary, ...]
    verdicts: dict[str, VerdictRow]


# A load curve's answer is its figures (report/curves.py), not its steps: at a fixed
# offered rate a device delivers that rate, whichever it is.
CURVE_FIGURES = ("saturation_", "sla_", "knee_")


def _curve_figure(name: str) -> int | None:
    return next((i for i, p in enumerate(CURVE_FIGURES) if name.startswith(p)), None)


def _headline_summaries(report: Report) -> list[CaseSummary]:
    """The cases the answer shows: the headline of each case (core/headline.py), and for a
    workload with load curves its saturation, SLA and knee rates instead of its steps."""
    curves = {s.workload for s in report.summaries if _curve_figure(s.metric) is not None}
    # Burst / warm-up windows are details (the verdicts judge the sustained level and the
    # time lines below the answers say so); the answer keeps one line per case.
    return [s for s in report.summaries
            if ((_curve_figure(s.metric) is not None) if s.workload in curves
                else headline(s.metric, s.tags, s.params))
            and WINDOW_TAG not in s.tags
            and metricinfo.comparable(s.metric, s.unit, s.tags)]


def case_title(report: Report, s: CaseSummary) -> str:
    """"rand4k rw=randread — read IOPS": workload, varying parameters, metric."""
    shown = report.varying_params(s.workload)
    label = " ".join(f"{k}={s.params[k]}" for k in shown if k in s.params)
    what = " ".join(p for p in (metricinfo.op_label(s.metric, s.unit, s.tags.get("op", "")),
                                s.other_tags()) if p)
    mode = syncmode.of(s.params)
    if mode.syncs and syncmode.PARAM not in shown:  # a commit-bound case says how it syncs
        what += f", {mode.describe()}"
    return " ".join(p for p in (s.workload, label) if p) + f" — {what}"


def figure_note(report: Report, s: CaseSummary) -> str:
    """What the figures of a case are, where its metric says (an import's mean of progress
    lines: "mean of 3 progress interval(s) (pgbench -P) over 3 s"); empty otherwise."""
    for i in s.run_indices:
        for m in report.runs[i].metrics if 0 <= i < len(report.runs) else ():
            if m.name == s.metric and dict(m.tags) == dict(s.tags) and m.note:
                return m.note.split(":", 1)[0]
    return ""


def case_answers(report: Report) -> list[CaseAnswer]:
    """The headline comparisons grouped by case, in report order (workload, parameters)."""
    order = {name: i for i, name in enumerate(report.target_order())}
    groups: dict[tuple[str, ...], list[CaseSummary]] = {}
    for s in _headline_summaries(report):
        groups.setdefault(s.comparison_key, []).append(s)
    verdicts: dict[tuple[str, ...], dict[str, VerdictRow]] = {}
    for v in report.verdicts:
        verdicts.setdefault(v.candidate.comparison_key, {})[v.target] = v
    work = {name: i for i, name in enumerate(report.workloads())}
    answers = []
    for key, items in groups.items():
        items.sort(key=lambda s: order.get(s.target, len(order)))
        title = case_title(report, items[0])
        note = figure_note(report, items[0])
        answers.append(CaseAnswer(items[0].workload, f"{title} ({note})" if note else title,
                                  tuple(items), verdicts.get(key, {})))

    def place(a: CaseAnswer) -> tuple[object, ...]:
        s = a.summaries[0]
        figure = _curve_figure(s.metric)
        synced = commit_rank(s.metric, s.tags)
        return (work.get(a.workload, len(work)),
                tuple((k, value_order(v)) for k, v in s.params.items()),
                (-1, str(figure)) if figure is not None
                else (-1, str(synced)) if synced is not None else metricinfo.rank(s.metric),
                tuple(sorted(s.tags.items())))

    return sorted(answers, key=place)


def _verdict_cell(report: Report, answer: CaseAnswer, s: CaseSummary) -> str:
    """The verdict, and what power cuts lost: a target that is faster and loses
    acknowledged writes is never plainly "faster" (report/durability.py)."""
    found = durability.lookup(report.durability).get(
        (s.target, s.workload, params_key(dict(s.params))))
    cut = durability.short(found) if found is not None else ""
    speed = _speed_cell(report, answer, s)
    return " — ".join(p for p in (speed, cut) if p)


def _speed_cell(report: Report, answer: CaseAnswer, s: CaseSummary) -> str:
    if len(report.target_order()) < 2:
        return ""  # one target: nothing to compare, no "baseline" to name
    if s.target == report.baseline:
        return "baseline"
    row = answer.verdicts.get(s.target)
    if row is not None:
        return verdict_words(row)
    return "no baseline to compare with" if report.baseline else ""


def _fit(line: str, width: int, indent: int = 4, most: int = 2) -> list[str]:
    """A line wrapped at spaces to `width` columns, continuation lines indented by
    `indent`; at most `most` lines (the last cut with "…": the files have it whole)."""
    out: list[str] = []
    rest = line
    while len(rest) > width and len(out) < most - 1:
        cut = rest.rfind(" ", indent + 1, width)
        cut = cut if cut > indent + 10 else width
        out.append(rest[:cut].rstrip())
        rest = " " * indent + rest[cut:].strip()
    if len(rest) > width:
        rest = rest[:width - 1] + "…"
    return [*out, rest]


# Figures shown beside a commit-bound case's headlines, not judged (core/headline.py):
# the write IOPS beside its syncs/s, the sync call's own latency beside the commit's.
BESIDE = {"iops": ("iops", "write", "writes"), "commit_lat_mean": ("lat_mean", "sync", "sync"),
          "commit_lat_p99": ("lat_p99", "sync", "sync p99")}


def beside(report: Report, s: CaseSummary) -> str:
    """The figure shown beside a commit-bound case's headline ("(writes 1309 op/s)",
    "(sync 28 µs)"): shown with it, not judged; "" for any other figure."""
    shown = BESIDE.get(s.metric) if s.tags.get("op") == "sync" else None
    if shown is None:
        return ""
    metric, op, words = shown
    tags, key = {**s.tags, "op": op}, params_key(s.params)
    for w in report.summaries:
        if (w.target, w.workload, w.metric) == (s.target, s.workload, metric) \
                and dict(w.tags) == tags and params_key(w.params) == key:
            fig = geometric_figure(w.values)
            return f"({words} {format_value(fig.centre, w.unit)})" if fig else ""
    return ""


def case_lines(report: Report, answer: CaseAnswer, width: int = MAX_COLUMNS) -> list[str]:
    """A case's title, then one line per target: name, figure [interval], verdict (and a
    figure shown beside it, not judged)."""
    names = [s.target for s in answer.summaries]
    figures = [figure_text(s) for s in answer.summaries]
    name_w, fig_w = max(map(len, names)), max(map(len, figures))
    cells = [_verdict_cell(report, answer, s) for s in answer.summaries]
    asides = [beside(report, s) for s in answer.summaries]
    cell_w = max(map(len, cells)) if any(asides) else 0
    out = [answer.title]
    for name, fig, cell, aside in zip(names, figures, cells, asides, strict=True):
        line = f"  {name.ljust(name_w)}  {fig.ljust(fig_w)}  {cell.ljust(cell_w)}  {aside}"
        out += _fit(line.rstrip(), width, indent=name_w + fig_w + 6)
    return out


def answer_lines(report: Report, width: int = MAX_COLUMNS,
                 per_workload: int = MAX_CASES_PER_WORKLOAD) -> list[str]:
    """The answer block without its notes: per workload its first `per_workload` cases'
    lines, and how many more cases --details shows."""
    answers = case_answers(report)
    if not answers and not report.verdicts:
        return []
    vs = f"each target vs {report.baseline}" if report.baseline and \
        len(report.target_order()) > 1 else "each target"
    out = [f"Answer: {vs} (geometric mean of runs [95 % interval]; verdict in words)"]
    shown: dict[str, int] = {}
    hidden: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    left: set[tuple[str, str, str]] = set()
    for a in answers:
        # A commit-bound case answers with three figures (core/headline.py): one case.
        first = a.summaries[0]
        case = (a.workload, params_key(first.params), first.other_tags())
        new = case not in seen
        if new and shown.get(a.workload, 0) >= per_workload:
            if case not in left:
                left.add(case)
                hidden[a.workload] = hidden.get(a.workload, 0) + 1
            continue
        if new:
            seen.add(case)
            shown[a.workload] = shown.get(a.workload, 0) + 1
        out += case_lines(report, a, width)
        if new and shown[a.workload] == 1:  # the faults' phases once per workload (issue 23)
            out += [line for text in phaseview.answer_lines(report, a.workload)
                    for line in _fit(text, width)]
    out += [f"({n} more {w} case{'s' if n > 1 else ''}: volbench report --details)"
            for w, n in hidden.items()]
    # A workload without a headline metric (bonnie++'s columns) is still named.
    for w in report.workloads():
        if w not in shown:
            compared = sum(1 for v in report.verdicts if v.candidate.workload == w)
            out.append(f"{w}: no headline metric; its {compared} comparison(s) are in "
                       "volbench report --details")
    return out


# Warnings that change what a verdict means, most serious first; the others (few runs,
# outliers, drift) are in --details and the files.
SERIOUS = ("failed-target", "failed-runs", "stalled-run", "baseline", "environment",
           "commit-settings", "bad-value", "cache", "caches", "stall", "burst-refill",
           "time-window", "not-steady", "retried-runs")


def noisiest(report: Report) -> CaseSummary | None:
    """The headline case with the largest run-to-run CV, if above 5 % (quieter is normal)."""
    noisy = [s for s in _headline_summaries(report)
             if s.summary.cv is not None and s.summary.cv > 0.05]
    return max(noisy, key=lambda s: s.summary.cv or 0.0, default=None)


def note_lines(report: Report, width: int = MAX_COLUMNS, footer: bool = True) -> list[str]:
    """At most MAX_NOTES notes of what matters most: the noisiest case and its likely
    cause, the time lines (a burst judged on its sustained level), then the warnings
    that change a conclusion; and how many warnings are left to --details."""
    notes: list[str] = []
    loud = noisiest(report)
    if loud is not None:
        cv = (loud.summary.cv or 0.0) * 100.0
        text = f"noisiest: {case_title(report, loud)} on {loud.target}: run-to-run CV {cv:.0f} %"
        cause = noise.likely_cause(report.runs, loud.run_indices,
                                   in_vm=bool(report.environment.get("lab")))
        notes.append(f"{text}; {cause}" if cause else text)
    # Bursts, warm-ups and steady state change what the verdicts compare (timeline.py).
    notes += [f"time: {t.text}" for t in report.time_lines]
    serious = sorted((w for w in report.warnings if w.kind in SERIOUS),
                     key=lambda w: SERIOUS.index(w.kind))
    notes += [w.message for w in serious]
    out = [line for note in notes[:MAX_NOTES] for line in _fit(f"- {note}", width, indent=2)]
    shown = set(notes[:MAX_NOTES])
    left = sum(1 for w in report.warnings if w.message not in shown)
    more = f"{left} more warning{'s' if left != 1 else ''}; " if left > 0 else ""
    if footer:
        out.append(f"{more}all metrics, summaries and time windows: volbench report --details")
    return out


def render(report: Report, width: int = MAX_COLUMNS, footer: bool = True) -> list[str]:
    """The whole answer block: answers, then what matters most (and, with `footer`, where
    the rest is); empty when there is nothing to compare or show."""
    notes = note_lines(report, width, footer)
    for per_workload in range(MAX_CASES_PER_WORKLOAD, 0, -1):
        lines = answer_lines(report, width, per_workload)
        if not lines:
            return []
        block = [*lines, "", *notes] if notes else lines
        if len(block) <= BLOCK_LINES:
            return block
    # Many workloads: the first ones, then where the rest is, within the budget.
    room = max(BLOCK_LINES - len(notes) - 2, 2)
    if len(lines) > room:
        lines = [*lines[:room - 1], "(more workloads: volbench report --details)"]
    return [*lines, "", *notes] if notes else lines
