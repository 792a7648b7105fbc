"""What the user asked of a report (format-independent)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    # Metric names to summarise, compare and show; None = the primary metrics
    # (metricinfo.is_primary); ("all",) = every metric.
    metrics: tuple[str, ...] | None = None
    # The target every other is compared with; None = the experiment's `baseline:` (else
    # its first target). Choosing another needs no rerun: the runs are the same.
    baseline: str | None = None
    # HTML: most rows in the list of runs (failed runs are always listed); the CSV and
    # JSON exports carry every run.
    max_listed_runs: int = 2000
    # HTML: most time-series charts per workload, and runs drawn per target in each.
    max_series_charts: int = 24
    max_series_runs: int = 5
    # Terminal: the answer block only (False), or with every brief section after it
    # (`volbench report --details`). Files (Markdown, HTML, CSV, JSON) keep everything.
    details: bool = False
    # CSV and JSON: each run's per-second series too (`volbench report --series`).
    series: bool = False
