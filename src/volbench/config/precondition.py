"""A target's `precondition:` field: bring the storage into a known state before measuring.

    - {name: fresh, type: loopdisk, size: 2G, precondition: {discard: true, fill: 2x}}

`discard` runs blkdiscard on the target's block device before its filesystem is made;
`fill: Nx` writes the whole device (raw targets) or the filesystem's free space N times
with sequential 128 KiB direct writes, once per target build, untimed (docs/time.md).
Which targets may be discarded is decided in targets/precondition.py (docs/safety.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader
from volbench.config.sections import Section, Value
from volbench.config.spec import Boolean

MAX_PASSES = 10
TIMES_PATTERN = r"^\s*([0-9]+)\s*[xX]\s*$"
_TIMES = re.compile(TIMES_PATTERN)
DISCARD = Boolean("discard", False, help="blkdiscard the device before making the filesystem")
FILL = Value("fill", None, help="write the device (or free space) this many times: 1x, 2x",
             value={"anyOf": [{"type": "integer", "minimum": 0, "maximum": MAX_PASSES},
                              {"type": "string", "pattern": TIMES_PATTERN}]})
PRECONDITION = Section("precondition", None, fields=(DISCARD, FILL),
                       help="bring the storage into a known state first (docs/time.md)")


@dataclass(frozen=True)
class Precondition:
    discard: bool = False
    # How many times the fill writes the device or free space (0: no fill).
    fill: int = 0

    def __bool__(self) -> bool:
        return self.discard or self.fill > 0


def passes(value: Any) -> int:
    """`2x`, `2X` or 2 -> 2; 0 or `0x` means no fill."""
    if isinstance(value, bool):
        raise ValueError(f"expected a count such as 2x, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _TIMES.match(value):
        number = int(_TIMES.match(value).group(1))  # type: ignore[union-attr]
    else:
        raise ValueError(f"expected a count such as 1x or 2x, got {value!r}")
    if not 0 <= number <= MAX_PASSES:
        raise ValueError(f"expected 0x to {MAX_PASSES}x, got {value!r}")
    return number


def parse(r: Reader) -> Precondition:
    """The target's `precondition:` (`r` reads the target's entry); empty when absent."""
    if not r.has("precondition"):
        return Precondition()
    pr = r.get(PRECONDITION)
    seen = len(pr.problems)
    discard = pr.get(DISCARD)
    fill = 0
    value = pr.get(FILL)  # read even when absent, so a misspelt key lists it
    if value is not None:
        try:
            fill = passes(value)
        except ValueError as exc:
            pr.problem("fill", str(exc), "write it as 1x, 2x or 3x")
    pr.finish()
    spec = Precondition(discard, fill)
    if not spec and len(pr.problems) == seen:
        pr.problem("", "asks for nothing", "set discard: true and/or fill: 2x, or remove it")
    return spec
