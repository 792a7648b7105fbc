"""What the user asked of a report (format-independent)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    # Metric names to show in tables; None = the headline metrics; ("all",) = every metric.
    metrics: tuple[str, ...] | None = None
