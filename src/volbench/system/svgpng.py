"""SVG charts to PNG files with rsvg-convert (Debian's librsvg2-bin, ~1 MB).

The report writes SVG only: it never starts a process. Turning SVG into PNG needs a
renderer; a small dedicated converter is enough for charts volbench draws itself (plain
shapes and text, no scripts), so no browser is started for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from volbench.system import proc
from volbench.system.host import tools

SCALE = 2  # device pixels per CSS pixel: crisp on slides and high-density screens
SECONDS_PER_CHART = 30.0


def to_png(svg: Path, width: int, height: int, scale: int = SCALE) -> Path:
    """Write SVG `svg` as a PNG beside it, `scale` times its CSS size; returns the PNG path."""
    png = svg.with_suffix(".png")
    proc.run(
        [tools.require("rsvg-convert"), "--width", str(width * scale),
         "--height", str(height * scale), "--format", "png", "--output", str(png), str(svg)],
        timeout=SECONDS_PER_CHART,
        hint="PNG export needs rsvg-convert: apt-get install librsvg2-bin",
    )
    return png


def all_to_png(charts: Iterable[tuple[Path, int, int]]) -> list[Path]:
    """PNG files for (svg path, width, height) triples, in order."""
    return [to_png(path, width, height) for path, width, height in charts]
