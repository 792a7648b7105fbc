"""A disk class's caps, as the experiment file states them (enforced by
volbench.system.block.cgroups)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    """Caps per device and direction; None means uncapped."""

    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    def items(self) -> list[tuple[str, int]]:
        return [(f.name, v) for f in fields(self) if (v := getattr(self, f.name)) is not None]

    def __bool__(self) -> bool:
        return bool(self.items())
