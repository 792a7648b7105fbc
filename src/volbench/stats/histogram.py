"""Latency histograms: merge across repetitions, then read percentiles.

Percentiles cannot be averaged: the mean of two runs' p99 is not the p99 of the two runs
together. fio's json+ output carries the full latency histogram (`clat_ns.bins`: bin value
→ count), so repetitions are merged by adding counts and percentiles are read from the
merged histogram.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from volbench.stats.validation import StatisticsInputError


def merge_histograms(histograms: Iterable[Mapping[float, int]]) -> dict[float, int]:
    """Add the counts of histograms that share bin values; the result is sorted by bin."""
    merged: dict[float, int] = {}
    for number, bins in enumerate(histograms):
        values = [float(v) for v in bins]
        counts = list(bins.values())
        # Checked in bulk (C loops), then only the offending bin is looked for.
        if not all(map(math.isfinite, values)):
            where = next(v for v in values if not math.isfinite(v))
            raise StatisticsInputError(f"histogram {number} has a bin at {where!r}")
        bad = next(
            ((v, c) for v, c in zip(values, counts, strict=True) if c < 0 or int(c) != c), None
        )
        if bad is not None:
            raise StatisticsInputError(
                f"histogram {number} has count {bad[1]!r} at bin {bad[0]}: counts must be "
                "non-negative integers"
            )
        get = merged.get
        for value, count in zip(values, counts, strict=True):
            merged[value] = get(value, 0) + int(count)
    return dict(sorted(merged.items()))


def percentile_from_histogram(bins: Mapping[float, int], p: float) -> float:
    """The p-th percentile (0 <= p <= 100) of a histogram, with fio's convention.

    fio (stat.c, calc_clat_percentiles) walks the bins in ascending order, adding counts,
    and reports the first bin value at which the running count reaches p/100 · total. That
    is the nearest-rank definition: the smallest recorded value v with at least p % of
    the samples <= v. Bins with count 0 are skipped (fio's json+ lists none), so p = 0 is
    the smallest recorded value. `p` is read as the decimal it prints as (99.9 is 999/10
    exactly), so 99.9 of 1000 samples is the 999th, not the 1000th through binary rounding.
    """
    return percentiles_from_histogram(bins, [p])[0]


def percentiles_from_histogram(bins: Mapping[float, int], ps: Sequence[float]) -> list[float]:
    """Several percentiles of one histogram in one walk over its bins (see above)."""
    for p in ps:
        if not (0.0 <= p <= 100.0):
            raise StatisticsInputError(f"percentile must be between 0 and 100, got {p!r}")
    merged = merge_histograms([bins])
    total = sum(merged.values())
    if total == 0:
        raise StatisticsInputError("histogram has no samples; cannot read a percentile")
    # running >= (a/b) / 100 * total, compared in integers: Fractions are slow in a loop.
    wanted = []
    for i, p in enumerate(ps):
        exact = Fraction(repr(float(p)))
        wanted.append((exact, exact.numerator * total, exact.denominator * 100, i))
    wanted.sort()
    found: list[float] = [0.0] * len(ps)
    running = 0
    k = 0
    for value, count in merged.items():
        if count == 0:
            continue
        running += count
        while k < len(wanted) and running * wanted[k][2] >= wanted[k][1]:
            found[wanted[k][3]] = value
            k += 1
        if k == len(wanted):
            return found
    raise AssertionError("unreachable: the running count ends at the total")  # pragma: no cover
