"""Which stored values are believable (core/valuecheck.py): the one-pass check for the
usual all-fine run must never hide a problem the value-by-value check finds."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from volbench.core.model import CaseHistogram, Histogram, Metric, Parsed, Series
from volbench.core.valuecheck import parsed_problems, value_problem
from volbench.report.badvalues import believable_totals

BAD = [math.nan, math.inf, -math.inf, 2e18, -2e18, 10**19, True, "12"]
FINE = [0.0, -3.5, 1e18, 7, 10**18, None]


def run(metric: object = 1.0, point: object = 1.0, count: object = 3) -> Parsed:
    return Parsed(metrics=(Metric("iops", metric, "op/s"),),  # type: ignore[arg-type]
                  series=(Series("iops", "op/s", ((0.0, 1.0), (1.0, point))),),  # type: ignore[arg-type]
                  histograms=(Histogram("clat", "s", ((1e-5, 2), (2e-5, count))),))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_a_bad_value_anywhere_is_named(bad: object) -> None:
    assert value_problem(bad) is not None  # type: ignore[arg-type]
    assert [p.split(":")[0] for p in parsed_problems(run(metric=bad))] == ["iops"]
    assert [p.split(" at ")[0] for p in parsed_problems(run(point=bad))] == ["iops"]
    assert [p.split(":")[0] for p in parsed_problems(run(count=bad))] == ["clat histogram"]


@pytest.mark.parametrize("fine", FINE, ids=repr)
def test_fine_values_and_missing_ones_are_no_problem(fine: object) -> None:
    assert value_problem(fine) is None  # type: ignore[arg-type]
    assert list(parsed_problems(run(metric=fine, point=1.0 if fine is None else fine,
                                    count=fine if isinstance(fine, int) else 3))) == []


@pytest.mark.parametrize("bad", BAD[:6], ids=repr)
def test_summed_histograms_lose_only_their_bad_bins(bad: float) -> None:
    fine = CaseHistogram("t", "w", {}, "clat", "s", {}, 3, ((1e-5, 2), (2e-5, 7)))
    broken = replace(fine, bins=((1e-5, 2), (bad, 4), (2e-5, 7)))
    kept = believable_totals([fine, broken])
    assert kept[0] is fine and kept[1].bins == fine.bins
