"""Many verdicts at once: the Benjamini-Hochberg false discovery rate.

Each verdict's alpha covers that one comparison. A verdict table holds dozens: among
identical cases about one in twenty is called different by chance. Benjamini &
Hochberg (*J. R. Statist. Soc. B* 57 (1995) 289–300) keep the expected share of false
calls among the differences called at q: sort the m p-values, find the largest k with
p_(k) <= k·q/m, and keep the k smallest.
"""

from __future__ import annotations

from collections.abc import Sequence

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
