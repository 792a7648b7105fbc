"""`volbench fields [KIND]`: the fields a target type or workload tool takes, from the same
declarations its parser reads (config/spec.py), so what it prints cannot drift."""

from __future__ import annotations

import argparse
from typing import Any

from volbench import targets, workloads
from volbench.config.fields import did_you_mean
from volbench.config.spec import Field, rows
from volbench.core.errors import VolbenchError

AXIS_NOTE = "axis: one value or a list; the workload's cases are every combination of them"


def _kinds() -> dict[str, tuple[str, str]]:
    """name -> ("target type" | "workload tool", summary)."""
    found = {name: ("target type", t.summary) for name, t in targets.KINDS.items()}
    found.update({name: ("workload tool", w.summary) for name, w in workloads.KINDS.items()})
    return found


# Fields read outside a kind's own table: (where they apply, names).
TARGET_COMMON = (("", ("name", "type", "limits", "on", "precondition")),)
WORKLOAD_COMMON = (("", ("name", "tool")),)
CURVE_COMMON = (("", ("name", "tool")), ("load curves", ("load", "sla")))


def _also(fields: tuple[Field[Any], ...], groups: tuple[tuple[str, tuple[str, ...]], ...],
          where: str) -> str:
    """The shared fields, less those the kind's own table lists."""
    declared = {f.name for f in fields}
    parts = []
    for label, names in groups:
        left = [n for n in names if n not in declared]
        if left:
            parts.append((f"{label}: " if label else "") + ", ".join(left))
    return f"also: {'; '.join(parts)} ({where})"


def table(kind: str) -> list[str]:
    """The lines `volbench fields KIND` prints."""
    if kind in targets.KINDS:
        what, summary, fields = "type", targets.KINDS[kind].summary, targets.KINDS[kind].fields
        common = _also(fields, TARGET_COMMON, "docs/layouts.md")
    elif kind in workloads.KINDS:
        what, summary, fields = "tool", workloads.KINDS[kind].summary, workloads.KINDS[kind].fields
        curves = kind in ("fio", "pgbench")
        common = _also(fields, CURVE_COMMON if curves else WORKLOAD_COMMON,
                       "docs/curves.md" if curves else f"docs/workloads/{kind.rstrip('+')}.md")
    else:
        known = sorted(_kinds())
        raise VolbenchError(f"'{kind}' is neither a target type nor a workload tool "
                            f"({did_you_mean(kind, known) or 'known: ' + ', '.join(known)})")
    found = rows(fields)
    widths = [max(len(r[i]) for r in [("field", "default", "takes", ""), *found])
              for i in range(3)]
    lines = [f"{what}: {kind} — {summary}", ""]
    for row in [("field", "default", "takes", "meaning"), *found]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False))
                     + "  " + row[3])
    if any(f.what == "axis" for f in fields):
        common = f"{AXIS_NOTE}\n{common}"
    return [*lines, "", common]


def cmd_fields(args: argparse.Namespace) -> int:
    if args.kind is None:
        for name, (what, summary) in _kinds().items():
            print(f"{name:<12} {what:<14} {summary}")
        return 0
    print("\n".join(line.rstrip() for line in table(args.kind)))
    return 0
