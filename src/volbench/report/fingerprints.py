"""The runs' environment fingerprints (system/host/fingerprint.py) side by side.

`compare` and a report of several experiments carry one line naming the fingerprint
fields that are not the same everywhere: a difference in the results may come from
them (a new kernel, another disk firmware) rather than from what was meant to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volbench.report.checks import ReportWarning

# Fields named in the line; the rest are counted ("and 3 more"), the JSON has them all.
SHOWN = 8


def changes(prints: Sequence[Mapping[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    """Each field not the same in all `prints` (in order: A then B, or the experiments
    oldest first) with its values, a value repeated next to itself said once. Empty
    fingerprints (runs stored without one: imported, or older stores) are left out."""
    known = [p for p in prints if p]
    if len(known) < 2:
        return []
    out = []
    for key in sorted(set().union(*known)):
        values = [_shown(p.get(key)) for p in known]
        if len(set(values)) > 1:
            out.append((key, tuple(v for i, v in enumerate(values)
                                   if i == 0 or v != values[i - 1])))
    return out


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


def line(found: Sequence[tuple[str, tuple[str, ...]]]) -> str:
    """`environment differs: host.kernel 6.1 → 6.12, …` ("" when nothing differs)."""
    if not found:
        return ""
    shown = ", ".join(f"{key} {' → '.join(values)}" for key, values in found[:SHOWN])
    more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
    return f"environment differs: {shown}{more}"


def warnings(prints: Sequence[Mapping[str, Any]]) -> list[ReportWarning]:
    """The report's warning when its experiments ran in different environments."""
    text = line(changes(prints))
    return [ReportWarning("environment", text)] if text else []
