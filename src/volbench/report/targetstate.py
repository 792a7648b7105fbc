"""The state each target was measured in (fresh, filled, preconditioned, unknown), as the
report shows it and as `compare` checks it.

A device's speed depends on what was written to it before: an SSD slows down once every
block has been written (its garbage collection has no free blocks left), a thin volume
pays on first touch until its pool holds the blocks. Two result sets taken in different
states compare the states as much as the change under test. The state is recorded per
target by targets/precondition.py (`info["state"]`) and per run (`target_state`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from volbench.core.model import RunResult, TargetRow
from volbench.core.units import format_duration, format_value

NOT_RECORDED = "not recorded"


def _state(info: Mapping[str, Any]) -> Mapping[str, Any]:
    value = info.get("state") if isinstance(info, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def states(targets: Iterable[TargetRow]) -> dict[str, str]:
    """Each built target's state by name ('fresh / filled' when experiments disagree)."""
    found: dict[str, list[str]] = {}
    for t in targets:
        if t.status != "built":
            continue
        name = str(_state(t.info).get("state") or NOT_RECORDED)
        seen = found.setdefault(t.name, [])
        if name not in seen:
            seen.append(name)
    return {name: " / ".join(values) for name, values in found.items()}


def describe(state: Mapping[str, Any]) -> str:
    """'preconditioned: discard 0.2 s; fill 2x whole device, 128 MiB in 1.3 s'."""
    parts = []
    done = state.get("precondition")
    if isinstance(done, Mapping):
        discard, fill = done.get("discard"), done.get("fill")
        if isinstance(discard, Mapping):
            parts.append(f"discard {format_duration(float(discard.get('seconds', 0)))}")
        if isinstance(fill, Mapping):
            parts.append(
                f"fill {fill.get('passes')}x {fill.get('what')}, "
                f"{format_value(float(fill.get('bytes_written', 0)), 'B')} in "
                f"{format_duration(float(fill.get('seconds', 0)))}")
    if state.get("how"):
        parts.append(str(state["how"]))
    if state.get("thin_pool_data_percent") is not None:
        parts.append(f"thin pool {float(state['thin_pool_data_percent']):.1f} % full when built")
    text = str(state.get("state") or NOT_RECORDED)
    return text + (": " + "; ".join(parts) if parts else "")


def thin_range(runs: Iterable[RunResult], target: str) -> tuple[float, float] | None:
    """Lowest and highest thin pool data % seen as the target's runs started."""
    seen = [float(v) for r in runs if r.target == target
            for v in [(r.annotations.get("target_state") or {}).get("thin_pool_data_percent")]
            if isinstance(v, int | float)]
    return (min(seen), max(seen)) if seen else None


def rows(targets: Iterable[TargetRow], runs: Iterable[RunResult]) -> list[tuple[str, str]]:
    """(target, what its state was) for the targets that recorded one."""
    runs = list(runs)
    out = []
    for t in targets:
        if t.status != "built" or not _state(t.info):
            continue
        text = describe(_state(t.info))
        span = thin_range(runs, t.name)
        if span is not None:
            seen = f"{span[0]:.1f}" if span[0] == span[1] else f"{span[0]:.1f}–{span[1]:.1f}"
            text += f"; thin pool {seen} % full as runs started"
        out.append((t.name, text))
    return out


# Thin pools this many points apart put first-touch costs on one side only.
THIN_POINTS = 25.0


def _thin(targets: Iterable[TargetRow]) -> dict[str, float]:
    out = {}
    for t in targets:
        value = _state(t.info).get("thin_pool_data_percent")
        if t.status == "built" and isinstance(value, int | float):
            out[t.name] = float(value)
    return out


def differences(a: Iterable[TargetRow], b: Iterable[TargetRow],
                label_a: str = "A", label_b: str = "B") -> list[str]:
    """One warning per target measured in different states in the two sets (or with
    thin pools far apart in how full they were)."""
    a, b = list(a), list(b)
    sa, sb = states(a), states(b)
    ta, tb = _thin(a), _thin(b)
    out = [f"target {name}: its thin pool was {ta[name]:.0f} % full in {label_a}, "
           f"{tb[name]:.0f} % in {label_b} when built: writes to blocks the pool does not "
           "hold yet pay for provisioning them (precondition: {fill: 1x} fills it)"
           for name in sorted(set(ta) & set(tb)) if abs(ta[name] - tb[name]) >= THIN_POINTS]
    for name in sorted(set(sa) & set(sb)):
        if sa[name] != sb[name] and NOT_RECORDED not in (sa[name], sb[name]):
            out.append(
                f"target {name}: {label_a} was {sa[name]}, {label_b} {sb[name]}: a device's "
                "speed depends on what was written to it before (a full SSD, a thin pool's "
                "first touch), so the difference may come from the state; give both the same "
                "precondition: (docs/time.md)")
    return out
