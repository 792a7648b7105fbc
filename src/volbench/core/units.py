"""Parse and format sizes, durations and rates as users write them.

Sizes use binary multiples (K = KiB = 1024), as fio, dd and lvcreate do, so
"4k" means the same here as in the tool's own job file.
"""

from __future__ import annotations

import math
import re

# The forms of a size and a duration, written so that a JSON Schema (ECMAScript regular
# expressions: no flags) states the same rule (`volbench schema`).
SIZE_PATTERN = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtTpP]?)([iI]?[bB]?)\s*$"
DURATION_PATTERN = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([mM][sS]|[sS]|[mM]|[mM][iI][nN]|[hH])?\s*$"
# The same, more than zero (a lookahead for a digit other than 0).
POSITIVE = r"(?=[^1-9]*[1-9])"
_SIZE = re.compile(SIZE_PATTERN)
_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
# Far beyond any disk or run (an exbibyte, ~32 years): larger values are typos or hostile
# input, and refusing them keeps 400-digit numbers from overflowing later arithmetic.
MAX_SIZE = 2**60
MAX_SECONDS = 1e9


def parse_size(text: str | int) -> int:
    """'4k' -> 4096, '2G' -> 2 GiB, 512 -> 512. Raises ValueError with the accepted forms."""
    if isinstance(text, bool):
        raise ValueError(f"expected a size such as 4k, 1M or 2G, got {text!r}")
    # A number as YAML gives it, a float too: a float's text may be in e-notation
    # (2.2e+278), which the text form refuses while the schema's "number" lets it pass.
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"a size cannot be negative: {text}")
        return _size_bounded(text, text)
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"expected a size such as 4k, 1M or 2G, got {_shown(text)}")
    number, prefix, _ = m.groups()
    return _size_bounded(float(number) * _SIZE_FACTORS[prefix.lower()], text)


def _shown(value: object) -> str:
    """A value as a message quotes it: a 400-digit number is not worth printing whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def _size_bounded(size: float, text: object) -> int:
    if not size <= MAX_SIZE:  # also catches inf and nan
        raise ValueError(f"{_shown(text)} is larger than any disk (at most 1E)")
    return int(size)


def parse_duration(text: str | int | float) -> float:
    """'10s' -> 10.0, '2m' -> 120.0, 5 -> 5.0 (seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"expected a duration such as 10s, 2m or 1h, got {text!r}")
    if isinstance(text, int | float):
        if math.isnan(text):  # YAML's .nan
            raise ValueError("not a number (.nan); expected a duration such as 10s, 2m or 1h")
        if text < 0:
            raise ValueError(f"a duration cannot be negative: {_shown(text)}")
        return _seconds_bounded(text, text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"expected a duration such as 10s, 2m or 1h, got {_shown(text)}")
    number, unit = m.groups()
    return _seconds_bounded(float(number) * _DURATION_FACTORS[(unit or "s").lower()], text)


def _seconds_bounded(seconds: float, text: object) -> float:
    if not seconds <= MAX_SECONDS:  # also catches inf
        raise ValueError(f"{_shown(text)} is longer than any run (at most {MAX_SECONDS:g} s)")
    return float(seconds)


def format_size(n: float) -> str:
    """4096 -> '4k', 2**30 -> '1G' (fio's spelling); non-round values get one decimal."""
    for prefix in ("P", "T", "G", "M", "K"):
        f = _SIZE_FACTORS[prefix.lower()]
        if n >= f:
            q = n / f
            text = f"{q:.0f}" if q == int(q) else f"{q:.1f}"
            return text + (prefix.lower() if prefix == "K" else prefix)
    return f"{n:.0f}"


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 120:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


_HUMAN = {
    "B": (1024.0, ["B", "KiB", "MiB", "GiB", "TiB"]),
    "B/s": (1024.0, ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"]),
}


def format_value(value: float | None, unit: str) -> str:
    """A value in base units as a person reads it: 0.00123 s -> '1.23 ms'."""
    if value is None:
        return "—"
    if unit in _HUMAN:
        base, names = _HUMAN[unit]
        v, i = float(value), 0
        while abs(v) >= base and i < len(names) - 1:
            v, i = v / base, i + 1
        return f"{v:.3g} {names[i]}" if abs(v) < 1000 else f"{v:.0f} {names[i]}"
    if unit == "s":
        a = abs(value)
        if a and a < 1e-3:
            return f"{value * 1e6:.3g} µs"
        if a and a < 1:
            return f"{value * 1e3:.3g} ms"
        return f"{value:.3g} s" if a < 1000 else f"{value:.0f} s"
    if unit == "%":
        return f"{value:.1f} %"
    text = f"{value:.4g}" if abs(value) < 10000 else f"{value:.0f}"
    return f"{text} {unit}".strip()
