"""Group-sequential designs (volbench.stats.sequential) and compare() at a look.

Expected values come from published constants (Pocock 1977; O'Brien & Fleming 1979, as
tabulated by Jennison & Turnbull 2000, tables 2.1 and 2.3) or a seeded Monte-Carlo of
the Brownian motion written here, never from the implementation's own output.
"""

from __future__ import annotations

import math
import random

import pytest

from volbench.stats import SequentialDesign, Spending, StatisticsInputError, Verdict, compare
from volbench.stats.sequential import boundaries, crossing_probabilities, spent

FIVE = tuple(k / 5 for k in range(1, 6))


def test_published_pocock_and_obrien_fleming_constants_spend_five_percent() -> None:
    pocock = crossing_probabilities(FIVE, (2.413,) * 5)
    obf = crossing_probabilities(FIVE, tuple(2.040 * math.sqrt(5 / k) for k in range(1, 6)))
    assert sum(pocock) == pytest.approx(0.05, abs=3e-4)
    assert sum(obf) == pytest.approx(0.05, abs=3e-4)


@pytest.mark.parametrize("spending", list(Spending))
def test_boundaries_spend_alpha_as_the_spending_function_says(spending: Spending) -> None:
    fractions = tuple(n / 12 for n in range(3, 13))
    bounds = boundaries(fractions, 0.05, spending)
    crossed = crossing_probabilities(fractions, bounds)
    total = 0.0
    for t, p in zip(fractions, crossed, strict=True):
        total += p
        assert total == pytest.approx(spent(spending, 0.05, t), abs=2e-4)
    assert total == pytest.approx(0.05, abs=2e-4)


@pytest.mark.slow
def test_a_brownian_motion_crosses_the_boundaries_five_percent_of_the_time() -> None:
    bounds = boundaries(FIVE, 0.05, Spending.POCOCK)
    rng = random.Random(5)
    trials, crossed = 40_000, 0
    for _ in range(trials):
        b = 0.0
        for k, c in enumerate(bounds):
            b += rng.gauss(0.0, math.sqrt(0.2))
            if abs(b) / math.sqrt(FIVE[k]) >= c:
                crossed += 1
                break
    assert crossed / trials == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / trials))


def test_pocock_boundaries_are_nearly_flat_and_obrien_fleming_falls() -> None:
    pocock = boundaries(FIVE, 0.05, Spending.POCOCK)
    obf = boundaries(FIVE, 0.05, Spending.OBRIEN_FLEMING)
    assert max(pocock) - min(pocock) < 0.1 and pocock[0] > 1.96
    assert obf[0] > 4.0 and obf[-1] < 2.1 and list(obf) == sorted(obf, reverse=True)


def test_design_looks_and_levels() -> None:
    design = SequentialDesign(3, 10)
    assert design.looks == 8
    assert design.look(2) == 1 and design.look(3) == 1 and design.look(10) == 8
    assert design.look(40) == 8  # more runs than planned count as the last look
    levels = [design.nominal_alpha(n, 0.05) for n in range(3, 11)]
    assert all(0.005 < a < 0.05 for a in levels)
    assert SequentialDesign(5, 5).nominal_alpha(5, 0.05) == 0.05  # one look: no spending
    assert SequentialDesign.for_repeat(3, 3) is None
    assert SequentialDesign.for_repeat(1, 2) == SequentialDesign(2, 2)
    assert SequentialDesign.for_repeat(1, 1) is None
    with pytest.raises(StatisticsInputError):
        SequentialDesign(1, 5)
    with pytest.raises(StatisticsInputError):
        boundaries((0.5, 0.4), 0.05, Spending.POCOCK)


def test_compare_at_a_look_uses_the_nominal_level_and_repeated_intervals() -> None:
    base = [100.0, 104.0, 97.0]
    fast = [109.0, 113.0, 106.0]
    fixed = compare(fast, base, higher_is_better=True)
    design = SequentialDesign(3, 20)
    look = compare(fast, base, higher_is_better=True, design=design)
    assert fixed.verdict is Verdict.BETTER and fixed.look is None
    assert look.look == 1 and look.looks == 18
    assert look.nominal_alpha == pytest.approx(design.nominal_alpha(3, 0.05))
    assert look.ratio_ci is not None and fixed.ratio_ci is not None
    assert look.ratio_ci.level == pytest.approx(1.0 - look.nominal_alpha)
    # The repeated interval is wider: ~1.2 % nominal needs t ~ 4.6 instead of 2.8.
    assert look.ratio_ci.low < fixed.ratio_ci.low and look.ratio_ci.high > fixed.ratio_ci.high
    assert look.p_value == fixed.p_value  # the p-value itself stays Welch's
