"""Student t, normal and binomial distributions, written out with the standard library.

The t distribution is reached through the regularized incomplete beta function
I_x(a, b), evaluated with the continued fraction of Numerical Recipes (Press et al.,
*Numerical Recipes*, 3rd ed., 2007, §6.4) by the modified Lentz method. That covers
non-integer degrees of freedom, which Welch's test needs. Quantiles are found by a
safeguarded Newton iteration, started from the Cornish-Fisher expansion, that falls back
to bisection whenever a step would leave the bracket, so it always converges.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

from volbench.stats.validation import StatisticsInputError, check_probability

_STANDARD_NORMAL = NormalDist()
_TINY = 1e-300  # keeps Lentz's denominators away from zero
_CF_EPS = 1e-15
# The continued fraction needs O(sqrt(max(a, b))) terms; 10 000 covers df up to ~1e8.
_CF_MAX_TERMS = 10_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction for I_x(a, b) (Numerical Recipes `betacf`), modified Lentz."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_MAX_TERMS + 1):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b})")


def _incomplete_beta(x: float, y: float, a: float, b: float) -> float:
    """I_x(a, b) with y = 1 - x passed separately, so neither loses digits near 0 or 1."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    front = math.exp(log_front)
    # The fraction converges quickly only for x < (a+1)/(a+b+2); use the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a) on the other side.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, y) / b


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) = B(x; a, b) / B(a, b) for 0 <= x <= 1 and a, b > 0."""
    if not (0.0 <= x <= 1.0) or not (a > 0.0 and b > 0.0):
        raise StatisticsInputError(f"incomplete beta needs 0<=x<=1, a>0, b>0; got {x}, {a}, {b}")
    return _incomplete_beta(x, 1.0 - x, a, b)


def _check_df(df: float) -> None:
    if not df > 0.0:  # also refuses NaN
        raise StatisticsInputError(f"degrees of freedom must be positive, got {df!r}")


def t_pdf(t: float, df: float) -> float:
    """Density of Student's t with `df` degrees of freedom (df may be fractional or inf)."""
    _check_df(df)
    if math.isinf(df):
        return _STANDARD_NORMAL.pdf(t)
    log_density = (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )
    return math.exp(log_density)


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|): the two-sided p-value of a t statistic, accurate in the far tail.

    Uses P(|T| >= t) = I_{df/(df+t^2)}(df/2, 1/2) directly, so small p-values are not the
    difference of two numbers close to 1.
    """
    _check_df(df)
    if math.isnan(t):
        raise StatisticsInputError("t statistic is NaN")
    if math.isinf(t):
        return 0.0
    if math.isinf(df):
        return min(1.0, 2.0 * normal_sf(abs(t)))
    t2 = t * t
    return min(1.0, _incomplete_beta(df / (df + t2), t2 / (df + t2), df / 2.0, 0.5))


def t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t."""
    tail = 0.5 * t_two_sided_p(t, df)
    return tail if t >= 0.0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """Distribution function P(T <= t) of Student's t."""
    return t_sf(-t, df)


def _cornish_fisher(z: float, df: float) -> float:
    """Cornish-Fisher expansion of the t quantile from the normal one (Abramowitz and
    Stegun 26.7.5): a starting point within ~1e-4 for df >= 3, refined below."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@functools.lru_cache(maxsize=65536)
def t_quantile(p: float, df: float) -> float:
    """The t such that P(T <= t) = p, for 0 < p < 1 (e.g. t_quantile(0.975, 10) = 2.228).

    Cached: summaries ask for the same (p, n - 1) over and over.
    """
    check_probability(p, "probability")
    _check_df(df)
    if math.isinf(df):
        return _STANDARD_NORMAL.inv_cdf(p)
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)  # solve for t > 0 with P(T > t) = tail, then restore the sign
    z = -_STANDARD_NORMAL.inv_cdf(tail)
    # Newton from the Cornish-Fisher estimate needs two or three steps; the bracket
    # [low, high] keeps every step safe (bisection when Newton would leave it).
    t = _cornish_fisher(z, df) if df >= 3.0 else max(1.0, z)
    low, high = 0.0, math.inf
    for _ in range(200):
        excess = t_sf(t, df) - tail  # decreasing in t
        if excess > 0.0:
            low = t
        else:
            high = t
        density = t_pdf(t, df)
        candidate = t + excess / density if density > 0.0 else math.inf
        if not (low < candidate < high):
            candidate = (low + high) / 2.0 if math.isfinite(high) else 2.0 * t
        if abs(candidate - t) <= 1e-13 * max(1.0, t):
            t = candidate
            break
        t = candidate
    return t if p > 0.5 else -t


def normal_quantile(p: float) -> float:
    """Standard normal quantile (statistics.NormalDist, Acklam/Wichura accuracy)."""
    check_probability(p, "probability")
    return _STANDARD_NORMAL.inv_cdf(p)


def normal_sf(z: float) -> float:
    """Upper tail P(Z > z) of the standard normal distribution.

    Through erfc, not 1 - erf: erf(z) rounds to 1 in the far tail (z = 9 lost every digit),
    erfc keeps full relative precision there.
    """
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def binomial_half_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2), via P(B <= k) = I_{1/2}(n - k, k + 1)."""
    if n < 0:
        raise StatisticsInputError(f"binomial size must be >= 0, got {n}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return _incomplete_beta(0.5, 0.5, float(n - k), float(k + 1))


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = total = 1.0 / a
    denominator = a
    for _ in range(_CF_MAX_TERMS):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _CF_EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_fraction(a: float, x: float) -> float:
    """Q(a, x) = 1 - P(a, x) by its continued fraction (x >= a + 1), modified Lentz."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _CF_MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = b + an / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        if abs(d * c - 1.0) < _CF_EPS:
            break
    return h * math.exp(-x + a * math.log(x) - math.lgamma(a))


def chi2_cdf(x: float, df: float) -> float:
    """P(X <= x) for a chi-square with `df` (possibly fractional) degrees of freedom:
    the regularized lower incomplete gamma P(df/2, x/2) (Numerical Recipes §6.2)."""
    _check_df(df)
    if x <= 0.0:
        return 0.0
    a, half = df / 2.0, x / 2.0
    return _gamma_series(a, half) if half < a + 1.0 else 1.0 - _gamma_fraction(a, half)


def chi2_quantile(p: float, df: float) -> float:
    """The x with P(X <= x) = p, by bisection on chi2_cdf (monotone)."""
    check_probability(p, "probability")
    _check_df(df)
    low, high = 0.0, max(1.0, df)
    while chi2_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if chi2_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0
