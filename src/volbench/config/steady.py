"""The experiment's `steady:` section: when a metric counts as steady over rounds.

    steady: {metric: iops, window: 5, range: 20%, slope: 10%}

The SNIA PTS rule (volbench.stats.steady): a window of `window` consecutive rounds whose
range stays within `range` of its mean and whose best-fit line moves at most `slope` of
it. The report says per case whether and from which round the rule held, and its verdicts
use the rounds from the steady window on (docs/time.md). Shares are written `20%` or
`0.2`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader
from volbench.stats.steady import RANGE, SLOPE, WINDOW


@dataclass(frozen=True)
class SteadySpec:
    metric: str = "iops"
    window: int = WINDOW
    range: float = RANGE
    slope: float = SLOPE


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
    sr = r.sub("steady")
    spec = SteadySpec(
        sr.text("metric", "iops"),
        sr.integer("window", WINDOW, minimum=2, maximum=100),
        _share(sr, "range", RANGE),
        _share(sr, "slope", SLOPE),
    )
    sr.finish()
    return spec


def from_document(document: Mapping[str, Any]) -> SteadySpec | None:
    """The spec of a stored (already validated) document, for reports; None if absent or
    unreadable."""
    problems: list[Any] = []
    spec = parse(Reader(document, "", problems)) if isinstance(document, Mapping) else None
    return None if problems else spec
