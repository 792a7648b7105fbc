"""Which measured values are believable: finite and not absurdly large.

The importer refuses a file holding any other value (naming the file and the
field); the report leaves such a value out with a warning naming the run, so one
bad stored value never stops a whole report. Depends only on the result model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping

from volbench.core.model import Parsed

# Larger than any real figure: an exabyte, 10^18 operations per second or seconds.
# A value beyond it comes from a corrupted or edited file, not from a disk.
MAX_VALUE = 1e18


def value_problem(value: float | None) -> str | None:
    """Why `value` cannot be a measurement (None: it can; None itself means "missing")."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if isinstance(value, int):  # exact, and may be too large for a float
        return None if abs(value) <= MAX_VALUE else (
            f"a {len(str(abs(value)))}-digit number is larger than any real measurement")
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    # Negative values are not refused: some are real (macro.py's "other" time when
    # phases overlap).
    if abs(value) > MAX_VALUE:
        return f"{value:.3g} is larger than any real measurement"
    return None


def _where(name: str, tags: Mapping[str, str]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in tags.items())
    return f"{name} ({shown})" if shown else name


def all_fine(values: Iterable[object]) -> bool:
    """True when every value is a float or int in range (the usual case), as
    value_problem would find: one pass without building a message, a fraction of the
    time it takes one by one. NaN fails both comparisons, inf the bound; a bool or None
    is neither type, so value_problem looks at it (None is "missing", not a problem)."""
    return all((type(v) is float or type(v) is int) and -MAX_VALUE <= v <= MAX_VALUE
               for v in values)


def parsed_problems(parsed: Parsed) -> Iterator[str]:
    """'<field>: <why>' for every value of `parsed` that cannot be a measurement."""
    if (all_fine(m.value for m in parsed.metrics)
            and all(all_fine(itertools.chain.from_iterable(s.points)) for s in parsed.series)
            and all(all_fine(itertools.chain.from_iterable(h.bins))
                    for h in parsed.histograms)):
        return
    for metric in parsed.metrics:
        if (why := value_problem(metric.value)) is not None:
            yield f"{_where(metric.name, metric.tags)}: {why}"
    for series in parsed.series:
        for t, v in series.points:
            why = value_problem(t) or value_problem(v)
            if why is not None:
                yield f"{_where(series.name, series.tags)} at {t}: {why}"
                break
    for hist in parsed.histograms:
        for bin_value, count in hist.bins:
            why = value_problem(bin_value) or value_problem(count)
            if why is not None:
                yield f"{_where(hist.name, hist.tags)} histogram: {why}"
                break


# Metrics that can be below zero: macro.py's "other" (real − user − sys, when a job ran on
# several CPUs at once). No tool's rate, size, count or time can.
MAY_BE_NEGATIVE = frozenset({"other"})


def negative_problems(parsed: Parsed) -> Iterator[str]:
    """'<field>: <value> is negative' for every value of `parsed` below zero that no tool
    measures so (an imported `iops: -5`)."""
    for metric in parsed.metrics:
        if metric.value is not None and metric.value < 0 \
                and metric.name not in MAY_BE_NEGATIVE:
            yield f"{_where(metric.name, metric.tags)}: {metric.value:g} is negative"
    for series in parsed.series:
        if series.name in MAY_BE_NEGATIVE:
            continue
        low = next(((t, v) for t, v in series.points if v < 0), None)
        if low is not None:
            yield f"{_where(series.name, series.tags)} at {low[0]:g}: {low[1]:g} is negative"
    for hist in parsed.histograms:
        if any(v < 0 or c < 0 for v, c in hist.bins):
            yield f"{_where(hist.name, hist.tags)} histogram: a negative value or count"
