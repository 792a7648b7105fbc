"""Many verdicts at once: Holm's family-wise levels and the Benjamini-Hochberg rate.

Each verdict's alpha covers that one comparison. A verdict table holds dozens: among
identical cases about one in twenty is called different by chance. Benjamini &
Hochberg (*J. R. Statist. Soc. B* 57 (1995) 289–300) keep the expected share of false
calls among the differences called at q: sort the m p-values, find the largest k with
p_(k) <= k·q/m, and keep the k smallest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from volbench.stats.validation import StatisticsInputError, check_probability


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which p-values are discoveries at false discovery rate q (in input order)."""
    check_probability(q, "q")
    if any(not 0.0 <= p <= 1.0 for p in p_values):
        raise StatisticsInputError(f"p-values must lie in [0, 1]: {list(p_values)}")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    kept = 0
    for rank, index in enumerate(order, 1):
        if p_values[index] <= rank * q / m:
            kept = rank
    chosen = set(order[:kept])
    return [i in chosen for i in range(m)]


def holm_levels(
    p_values: Sequence[float | None],
    alpha: float = 0.05,
    rejects: Callable[[int, float], bool] | None = None,
) -> list[float]:
    """Holm's step-down levels (*Scand. J. Statist.* 6 (1979) 65–70), in input order.

    Sorted by p, the k-th of m hypotheses is tested at alpha / (m - k + 1) while every
    smaller p was rejected at its own level; at the first that is not, it and all larger
    p keep that step's level. Testing (or drawing the interval of) each hypothesis at
    its returned level rejects exactly Holm's set, so the chance of any false rejection
    among the m is at most alpha whatever their dependence, and each interval agrees with
    its decision. None (a comparison without a p-value) counts in m and sorts last.
    `rejects(index, level)` decides a step when the test is not "p <= level" (a
    group-sequential look tests at its own nominal level); the order is still by p.
    """
    check_probability(alpha, "alpha", high=0.5)
    m = len(p_values)
    if any(p is not None and not 0.0 <= p <= 1.0 for p in p_values):
        raise StatisticsInputError(f"p-values must lie in [0, 1]: {list(p_values)}")
    order = sorted(range(m), key=lambda i: (p_values[i] is None, p_values[i] or 0.0))
    levels = [0.0] * m
    rejecting = True
    level = alpha / m if m else alpha
    for step, index in enumerate(order):
        if rejecting:
            level = alpha / (m - step)
            p = p_values[index]
            if p is None:
                rejecting = False
            elif rejects is None:
                rejecting = p <= level
            else:
                rejecting = rejects(index, level)
        levels[index] = level
    return levels
