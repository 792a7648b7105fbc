"""The report's outline, defined once: which sections there are and in what order.

The terminal, Markdown and HTML exporters all walk `OUTLINE` with `walk()`; each gives
its own rendering of a section (hyperfine's MarkupExporter is the model: one order,
one renderer per format). Two switches let the formats differ where they must:

- `brief` sections are the ones the terminal shows (the rest are there in a file);
- `per_workload` sections form a group that a page-like format (HTML) repeats for each
  workload under its own heading, while a flat one (Markdown, terminal) renders each of
  them once across all workloads, with a workload column.

Adding a section means one line here and one method per renderer; the order of the
formats cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from volbench.report.data import Report
from volbench.report.options import ReportOptions


@dataclass(frozen=True)
class Part:
    key: str  # the Renderer method that renders it, and the HTML anchor
    title: str  # its name in a table of contents
    brief: bool = False
    per_workload: bool = False


OUTLINE: tuple[Part, ...] = (
    # The answer first (report/answer.py): one line per target, the verdict in words.
    Part("answer", "Answer", brief=True),
    # the headline table, verdicts, time lines (and, in the terminal, which has no
    # environment section, the state each target was measured in)
    Part("verdicts", "Verdicts", brief=True),
    Part("warnings", "Warnings", brief=True),
    # Power cuts: what each case lost of what it was told was durable (docs/durability.md).
    Part("durability", "Power cuts", brief=True),
    Part("percent", "% of baseline"),
    Part("phases", "Faults and phases"),  # faulted runs only (docs/faults.md)
    Part("charts", "Charts", per_workload=True),
    Part("summary", "Summary", brief=True, per_workload=True),
    Part("curves", "Load curves", brief=True, per_workload=True),
    Part("percentiles", "Latency percentiles", per_workload=True),
    Part("per_run", "Per-run values", per_workload=True),
    Part("runs", "Runs"),
    Part("environment", "Environment"),  # with each target's recipe
)


class Renderer(Protocol):
    """One format's rendering of each section; `workload` is None in a flat format."""

    def answer(self, report: Report, options: ReportOptions) -> list[str]: ...
    def verdicts(self, report: Report, options: ReportOptions) -> list[str]: ...
    def warnings(self, report: Report, options: ReportOptions) -> list[str]: ...
    def durability(self, report: Report, options: ReportOptions) -> list[str]: ...
    def percent(self, report: Report, options: ReportOptions) -> list[str]: ...
    def phases(self, report: Report, options: ReportOptions) -> list[str]: ...
    def charts(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]: ...
    def summary(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]: ...
    def curves(self, report: Report, options: ReportOptions, workload: str | None
               ) -> list[str]: ...
    def percentiles(self, report: Report, options: ReportOptions, workload: str | None
                    ) -> list[str]: ...
    def per_run(self, report: Report, options: ReportOptions, workload: str | None
                ) -> list[str]: ...
    def runs(self, report: Report, options: ReportOptions) -> list[str]: ...
    def environment(self, report: Report, options: ReportOptions) -> list[str]: ...


class Grouping(Protocol):
    """What a page-like format puts around each workload's group of sections."""

    def workload_open(self, report: Report, workload: str) -> list[str]: ...
    def workload_close(self, report: Report, workload: str) -> list[str]: ...


def parts(*, brief: bool = False) -> tuple[Part, ...]:
    return tuple(p for p in OUTLINE if p.brief or not brief)


def walk(renderer: Renderer, report: Report, options: ReportOptions, *, brief: bool = False,
         grouping: Grouping | None = None) -> list[str]:
    """Every section of the outline in order, rendered by `renderer`. With a `grouping`,
    each run of per-workload sections is rendered once per workload inside it."""
    out: list[str] = []
    chosen = parts(brief=brief)
    i = 0
    while i < len(chosen):
        part = chosen[i]
        if not part.per_workload:
            out += getattr(renderer, part.key)(report, options)
            i += 1
            continue
        group = [part]
        while i + len(group) < len(chosen) and chosen[i + len(group)].per_workload:
            group.append(chosen[i + len(group)])
        if grouping is None:
            for p in group:
                out += getattr(renderer, p.key)(report, options, None)
        else:
            for workload in report.workloads():
                out += grouping.workload_open(report, workload)
                for p in group:
                    out += getattr(renderer, p.key)(report, options, workload)
                out += grouping.workload_close(report, workload)
        i += len(group)
    return out
