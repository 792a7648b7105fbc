"""Seeded coverage of the durability bounds (stats/durability.py).

Cuts are simulated as a sequence of losing (1) or not (0) outcomes with a true share p:

- `iid`: independent cuts, each losing with probability p (what random cut moments on a
  recovered stack aim at);
- `runs`: a two-state Markov chain with the same long-run share p whose outcomes
  persist (lag-1 correlation `rho`): a stack whose losses come in streaks, e.g. a cut
  that lands in a checkpoint makes the next cut land in the recovery's own writes.

`coverage` is the share of simulated cases whose one-sided upper bound is at or above
the true p (the claim "at most X % of cuts lose data"), and whose two-sided interval
holds p. Used by tests/unit/test_powercut_stats.py (small) and bench/durability.py (the
table in docs/durability.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from volbench.stats.durability import CONFIDENCE, interval, upper_bound

KINDS = ("iid", "runs")


@dataclass(frozen=True)
class Coverage:
    """Shares of simulated cases whose bound held the true p, out of `trials`."""

    p: float
    n: int
    kind: str
    rho: float
    trials: int
    upper: float
    two_sided: float


def outcomes(p: float, n: int, rng: random.Random, kind: str = "iid",
             rho: float = 0.0) -> list[int]:
    """n cut outcomes (1: the cut lost data) with long-run share p (module doc)."""
    if kind == "iid" or rho == 0.0:
        return [int(rng.random() < p) for _ in range(n)]
    # Stay in the last state with extra persistence rho; the chain's stationary share
    # is p and its lag-1 correlation is rho.
    up = p * (1 - rho)          # P(0 -> 1)
    down = (1 - p) * (1 - rho)  # P(1 -> 0)
    state = int(rng.random() < p)
    found = []
    for _ in range(n):
        found.append(state)
        state = (int(rng.random() >= down) if state else int(rng.random() < up))
    return found


def coverage(p: float, n: int, trials: int, seed: int, kind: str = "iid",
             rho: float = 0.0, confidence: float = CONFIDENCE) -> Coverage:
    """Shares of `trials` seeded cases of n cuts whose bounds held the true p."""
    rng = random.Random(seed)
    held_upper = held_both = 0
    for _ in range(trials):
        k = sum(outcomes(p, n, rng, kind, rho))
        held_upper += upper_bound(k, n, confidence) >= p
        low, high = interval(k, n, confidence)
        held_both += low <= p <= high
    return Coverage(p, n, kind, rho, trials, held_upper / trials, held_both / trials)
