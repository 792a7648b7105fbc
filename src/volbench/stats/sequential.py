"""Group-sequential designs: error rates that hold however often the data are looked at.

Adaptive repetition compares the targets after every round and stops a comparison once it
is decided. Testing at a fixed 5 % after every round is optional stopping: over 18 looks
identical targets are called different about one time in five. A group-sequential design
spends the overall alpha across the planned looks instead (Lan & DeMets, *Biometrika* 70
(1983) 659–663), so the chance of ever crossing a boundary stays alpha.

Looks are at n = first, first + 1, …, last runs per side; the information fraction of a
look is n / last. For each look the boundary c_k on the z scale is chosen so that the
probability (under "no difference") of crossing at look k and not before equals the
alpha spent between the previous look and this one. Those probabilities come from the
recursive numerical integration of Armitage, McPherson & Rowe (*J. R. Statist. Soc. A*
132 (1969) 235–244; Jennison & Turnbull, *Group Sequential Methods with Applications to
Clinical Trials*, Chapman & Hall 2000, ch. 19): the score B(t) = Z·√t is a Brownian
motion in the information fraction t.

The variance is not known and the first looks have 3 runs per side, so each look uses
Welch's t test at the boundary's *nominal* level (2·(1 − Φ(c_k))), the "significance
level approach" of Jennison & Turnbull §3.8; bench/calibration.py checks by simulation
that the overall rates stay at alpha with t tests from 3 runs on.

Spending functions (t in (0, 1]):
* Pocock-type, alpha·ln(1 + (e − 1)·t): spends evenly, so clear differences stop early;
  the last look's nominal level is lower than alpha, which costs power at the end.
* O'Brien–Fleming-type, 2 − 2·Φ(z_{1−alpha/2} / √t): almost nothing early, nearly the
  full alpha at the last look: power close to a fixed design of `last` runs, few early
  stops.
"""

from __future__ import annotations

import enum
import functools
import itertools
import math
from dataclasses import dataclass

from volbench.stats.distributions import normal_quantile, normal_sf
from volbench.stats.validation import StatisticsInputError, check_probability

# Grid points per look for the numerical integration (odd, for Simpson's rule). 81
# points give Pocock's and O'Brien-Fleming's published 5-look constants (2.413; 2.040)
# a total of 0.0500, and the same boundaries to 4 decimals as 61, 161 or 401 points;
# the cost grows with its square (a 3..50 design: ~1 s).
_GRID = 81
# Boundaries beyond this z are treated as "no stop possible": the nominal level there is
# below 1e-15 and the continuation region holds all the probability mass that matters.
_Z_CAP = 8.0
_SQRT2PI = math.sqrt(2.0 * math.pi)


class Spending(enum.StrEnum):
    """The Lan-DeMets alpha-spending function of a sequential design: Pocock spends
    evenly over the looks, O'Brien-Fleming keeps almost all of alpha for the last."""

    POCOCK = "pocock"
    OBRIEN_FLEMING = "obrien-fleming"


def spent(spending: Spending, alpha: float, t: float) -> float:
    """Alpha spent up to information fraction t (Lan-DeMets spending functions)."""
    if t >= 1.0:
        return alpha
    if spending is Spending.POCOCK:
        return alpha * math.log1p((math.e - 1.0) * t)
    return 2.0 * normal_sf(normal_quantile(1.0 - alpha / 2.0) / math.sqrt(t))


def _pdf(x: float) -> float:
    return math.exp(-0.5 * x * x) / _SQRT2PI


def _simpson_weights(count: int, step: float) -> list[float]:
    weights = [(4.0 if i % 2 else 2.0) for i in range(count)]
    weights[0] = weights[-1] = 1.0
    return [w * step / 3.0 for w in weights]


@dataclass(frozen=True)
class _Grid:
    """The sub-density of B(t) on the continuation region of the looks so far."""

    points: list[float]
    density: list[float]
    weights: list[float]


def _crossing(grid: _Grid, t: float, previous_t: float, c: float) -> float:
    """P(|Z(t)| >= c and no earlier crossing), from the previous look's sub-density."""
    edge = c * math.sqrt(t)
    spread = math.sqrt(t - previous_t)
    return math.fsum(
        w * f * (normal_sf((edge - b) / spread) + normal_sf((edge + b) / spread))
        for b, f, w in zip(grid.points, grid.density, grid.weights, strict=True)
    )


def _advance(grid: _Grid, t: float, previous_t: float, c: float) -> _Grid:
    """Sub-density of B(t) on |B| < c·√t for paths that have not crossed yet."""
    width = min(c, _Z_CAP) * math.sqrt(t)
    step = 2.0 * width / (_GRID - 1)
    points = [-width + i * step for i in range(_GRID)]
    spread = math.sqrt(t - previous_t)
    density = [
        math.fsum(
            w * f * _pdf((x - b) / spread)
            for b, f, w in zip(grid.points, grid.density, grid.weights, strict=True)
        )
        / spread
        for x in points
    ]
    return _Grid(points, density, _simpson_weights(_GRID, step))


def _solve_boundary(grid: _Grid, t: float, previous_t: float, target: float) -> float:
    """The c whose crossing probability is `target` (bisection: decreasing in c)."""
    if target <= _crossing(grid, t, previous_t, _Z_CAP):
        return _Z_CAP
    low, high = 0.0, _Z_CAP
    for _ in range(60):
        middle = (low + high) / 2.0
        if _crossing(grid, t, previous_t, middle) > target:
            low = middle
        else:
            high = middle
        if high - low < 1e-7:
            break
    return (low + high) / 2.0


def _first_grid(t: float, c: float) -> _Grid:
    """B(t_1) ~ N(0, t_1): its density on the continuation region after look 1."""
    width = min(c, _Z_CAP) * math.sqrt(t)
    step = 2.0 * width / (_GRID - 1)
    points = [-width + i * step for i in range(_GRID)]
    density = [_pdf(b / math.sqrt(t)) / math.sqrt(t) for b in points]
    return _Grid(points, density, _simpson_weights(_GRID, step))


def _check_fractions(fractions: tuple[float, ...]) -> None:
    if not fractions or any(not 0.0 < t <= 1.0 for t in fractions) or any(
        b <= a for a, b in itertools.pairwise(fractions)
    ):
        raise StatisticsInputError(f"information fractions must increase in (0, 1]: {fractions}")


def crossing_probabilities(fractions: tuple[float, ...], bounds: tuple[float, ...]) -> list[float]:
    """P(first crossing at look k) under "no difference", for given two-sided z bounds."""
    _check_fractions(fractions)
    found = [2.0 * normal_sf(bounds[0])]
    grid = _first_grid(fractions[0], bounds[0])
    for k in range(1, len(fractions)):
        t, previous = fractions[k], fractions[k - 1]
        found.append(_crossing(grid, t, previous, bounds[k]))
        grid = _advance(grid, t, previous, bounds[k])
    return found


@functools.lru_cache(maxsize=64)
def boundaries(fractions: tuple[float, ...], alpha: float, spending: Spending) -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_K for looks at increasing information fractions."""
    check_probability(alpha, "alpha", high=0.5)
    _check_fractions(fractions)
    first = fractions[0]
    c = min(normal_quantile(1.0 - spent(spending, alpha, first) / 2.0), _Z_CAP)
    found = [c]
    grid = _first_grid(first, c)
    previous = first
    for k, t in enumerate(fractions[1:], start=1):
        target = spent(spending, alpha, t) - spent(spending, alpha, fractions[k - 1])
        c = _solve_boundary(grid, t, previous, max(target, 0.0))
        found.append(c)
        if k < len(fractions) - 1:
            grid = _advance(grid, t, previous, c)
        previous = t
    return tuple(found)


@dataclass(frozen=True)
class SequentialDesign:
    """Looks after first, first + 1, …, last runs per side, with alpha spent by `spending`.

    `nominal_alpha(n, alpha)` is the two-sided level at which the look with n runs per
    side tests; equivalence (two one-sided tests at alpha each) uses the design for 2·alpha,
    so its interval at a look is the (1 − nominal_alpha(n, 2·alpha)) one, as a fixed design
    uses the 90 % interval.
    """

    first: int
    last: int
    spending: Spending = Spending.POCOCK

    def __post_init__(self) -> None:
        if not 2 <= self.first <= self.last:
            raise StatisticsInputError(
                f"a sequential design needs 2 <= first <= last runs, got {self.first}, "
                f"{self.last}"
            )

    @classmethod
    def for_repeat(cls, low: int, high: int) -> SequentialDesign | None:
        """The design of `repeat: {min: low, max: high, until: decided}`; None when no
        extra round can be taken. Looks before 2 runs per side test nothing, so spend
        nothing: the design starts at 2."""
        first = max(low, 2)
        return cls(first, high) if high > max(low, 1) and high >= first else None

    @property
    def looks(self) -> int:
        """How many looks the design takes (one per round from first to last, at least 1)."""
        return self.last - self.first + 1

    def look(self, n: int) -> int:
        """1-based look for n runs per side (clamped: fewer runs count as the first
        look, more than planned as the last)."""
        return min(max(n, self.first), self.last) - self.first + 1

    def nominal_alpha(self, n: int, alpha: float) -> float:
        """The two-sided level to test at with n runs per side, so that the looks together
        spend no more than `alpha` (equal to `alpha` for a single look)."""
        if self.looks == 1:
            return alpha
        fractions = tuple(m / self.last for m in range(self.first, self.last + 1))
        c = boundaries(fractions, alpha, self.spending)[self.look(n) - 1]
        return 2.0 * normal_sf(c)
