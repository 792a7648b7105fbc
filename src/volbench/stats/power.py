"""How many runs would decide a comparison, with a stated power.

The old estimate kept the observed effect and the observed spread: that is a coin flip
at best (extending samples to the promised n decided 28 % of cases at CV 5 %). Here:

* **Spread**: the one-sided 99.9 % upper confidence bound of the variance of the
  difference, s²·ν / χ²_{0.001, ν} with ν the Welch-Satterthwaite degrees of freedom (the
  spread from 3 runs is itself uncertain: its upper bound is 44 times the estimate at
  ν = 4, 9 times at ν = 8). A number is printed only when that bound decides within the
  cap, and the number is the one at that same bound (issue 32): with the number at the
  80 % bound and a gate at 95 %, a number printed where the cap binds was one whose
  first runs looked quiet, and it was kept in 0-11 % of identical-target cases at CV
  20 % and in half at CV 10 % from 3 runs. With number and gate at the same bound q, a
  printed number fails only when the spread's q bound is below the truth: in at most
  1 - q of undecided comparisons, and kept in 80 % or more wherever numbers are printed
  in 0.5 % of them or more. Where the truth needs more runs than the cap, every number
  printed fails, so such a cell must print (next to) none: at 99 % two of 1936
  identical-target cases at CV 20 % from 3 runs still got one (neither kept), at
  99.9 % none (bench/claims.py --promise). The observed spread gives `low`, which is no
  promise and is not printed. The bound assumes normal log rates (Student t3 ones keep
  it too); a busy host that slows one run in five is a second mode the first runs need
  not show, and there identical targets' numbers were kept in 0-17 % (bench/claims.py
  --promise-hard; docs/statistics.md): not solved from the runs alone.
* **Effect**: none is assumed. For n runs per side the estimate d of the log-difference
  is ~N(δ, se²); the comparison stays undecided when |d| is inside the difference
  test's half-width but outside the equivalence zone. The n returned is the smallest
  whose chance of staying undecided is at most 20 % for *every* true δ — a promise that
  does not depend on the effect the first runs happened to show.

bench/calibration.py checks the promise: extending samples to the promised n decides at
least 80 % of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from volbench.stats.distributions import chi2_quantile, normal_sf, t_quantile

POWER = 0.8
# The spread's upper bound the promise is made at, and the gate it must pass (the same
# bound: see the module's docstring).
SPREAD_CONFIDENCE = 0.999
# True differences tried between -h and h (the difference test's half-width): the
# undecided zone lies inside it, and its chance peaks at a zone's middle.
_DELTAS = 41


@dataclass(frozen=True)
class RunsRange:
    """Runs per side that decide with `POWER`: at the observed spread (`low`) and at the
    spread's upper confidence bound (`high`, the promise). None: more than the cap."""

    low: int | None
    high: int | None


Levels = Callable[[int], tuple[float, float]]  # n -> (difference level, equivalence level)


def _undecided(n: int, var_sum: float, ratio_df: float, band: tuple[float, float],
               levels: Levels) -> float:
    """Largest chance, over true differences, that n runs per side stay undecided."""
    se = math.sqrt(var_sum / n)
    df = max(1.0, (n - 1) * ratio_df)
    difference_level, equivalence_level = levels(n)
    h_diff = t_quantile(1.0 - difference_level / 2.0, df) * se
    h_eq = t_quantile(1.0 - equivalence_level / 2.0, df) * se
    low_eq, high_eq = band[0] + h_eq, band[1] - h_eq
    # Undecided: -h_diff < d < h_diff, minus the equivalence zone (low_eq, high_eq).
    zones = [(-h_diff, h_diff)] if low_eq >= high_eq else [
        (-h_diff, min(low_eq, h_diff)), (max(high_eq, -h_diff), h_diff)]
    zones = [(a, b) for a, b in zones if b > a]
    if not zones:
        return 0.0

    def chance(delta: float) -> float:
        return sum(normal_sf((a - delta) / se) - normal_sf((b - delta) / se) for a, b in zones)

    return max(chance(-h_diff + 2.0 * h_diff * i / (_DELTAS - 1)) for i in range(_DELTAS))


def _smallest(decides: Callable[[int], bool], start: int, cap: int) -> int | None:
    if not decides(cap):
        return None
    low, high = start - 1, cap  # decides(high); low not known to
    while high - low > 1:
        middle = (low + high) // 2
        if decides(middle):
            high = middle
        else:
            low = middle
    return high


def runs_to_decide(var_c: float, var_b: float, band: tuple[float, float], df: float,
                   levels: Levels, *, start: int, cap: int) -> RunsRange:
    """Runs per side (start..cap) whose chance of a decision is at least POWER for any
    true difference, at the observed spread (`low`) and at its upper SPREAD_CONFIDENCE
    bound (`high`, the promise; None when that bound would not decide within the cap).

    `var_c`, `var_b` are the sample variances on the test's scale and `df` their current
    Welch-Satterthwaite degrees of freedom. Degrees of freedom at n runs per side scale
    as (n - 1)·ratio, with ratio the current df over the current (n - 1) (so unequal
    spreads keep their Welch penalty).
    """
    var_sum = var_c + var_b
    if var_sum == 0.0:
        return RunsRange(start, start)
    ratio_df = (var_c + var_b) ** 2 / (var_c * var_c + var_b * var_b)
    upper = var_sum * df / chi2_quantile(1.0 - SPREAD_CONFIDENCE, df)

    def decides(spread: float) -> Callable[[int], bool]:
        return lambda n: _undecided(n, spread, ratio_df, band, levels) <= 1.0 - POWER

    return RunsRange(_smallest(decides(var_sum), start, cap),
                     _smallest(decides(upper), start, cap))
