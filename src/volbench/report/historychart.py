"""The chart of one `volbench history` line: a point per experiment with its interval.

x is the experiment's place in the line (1 = the oldest), not a time: experiments are
nights or weeks apart and unevenly so, and the change points are counted in experiments.
Each point carries its 95 % interval of the mean as a whisker, the stretches after each
change point are shaded, and every point's tooltip names the experiment, its host and
date. The y axis fits the medians (not 0): a history moves by a few per cent, which an
axis from 0 would flatten; a wide interval (two runs) is clipped at the axis' edge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from volbench.report.svg import (
    LEFT,
    RIGHT,
    TOP,
    WINDOW,
    Canvas,
    Drawing,
    axis_scale,
    esc,
    tick_text,
)

SEGMENT_LABEL = "after a change point"
INTERVAL_LABEL = "95 % interval of the mean"
INTERVAL = "#222"


@dataclass(frozen=True)
class Mark:
    """One experiment: its place (1-based), median, interval (None with one run) and the
    tooltip that names it (experiment, host, date, verdict)."""

    number: int
    median: float
    low: float | None
    high: float | None
    tooltip: str


@dataclass(frozen=True)
class Segment:
    """The experiments `start`..`end` (places, inclusive) after a change point, and its
    size in words ("change +10.0 %")."""

    start: int
    end: int
    text: str


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round steps covering [low, high] (not from 0)."""
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    return [round(first + i * step, 12) for i in range(math.ceil((high - first) / step) + 1)]


def _y_range(marks: Sequence[Mark]) -> tuple[float, float]:
    medians = [m.median for m in marks] or [0.0, 1.0]
    lo, hi = min(medians), max(medians)
    span = max(hi - lo, 0.04 * max(abs(lo), abs(hi))) or 1.0
    # Intervals widen the axis up to one span of the medians either side, no further.
    lows = [m.low for m in marks if m.low is not None]
    highs = [m.high for m in marks if m.high is not None]
    return (max(min([lo, *lows]), lo - span) - 0.05 * span,
            min(max([hi, *highs]), hi + span) + 0.05 * span)


def _x_ticks(count: int) -> list[int]:
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 10**9)
                if count / s <= 12)
    return sorted({1, *range(step, count + 1, step)})


def history_chart(title: str, subtitle: str, unit: str, label: str, fill: str,
                  marks: Sequence[Mark], segments: Sequence[Segment] = (),
                  x_caption: str = "experiment (1 = the oldest)") -> Drawing:
    """One history line: medians joined, interval whiskers, change-point stretches
    shaded (legend "after a change point"), x ticks numbering the experiments."""
    c = Canvas(720, 320, title, subtitle)
    width, height, bottom = c.width, c.height, 52
    plot_h = height - TOP - bottom
    count = max(1, len(marks))
    low, high = _y_range(marks)
    scale = axis_scale(max(abs(low), abs(high)), unit)
    ticks = [t * scale.factor for t in _ticks(low / scale.factor, high / scale.factor)]
    y_low, y_high = ticks[0], ticks[-1]

    def to_x(place: float) -> float:
        return LEFT + (width - LEFT - RIGHT) * (place - 0.5) / count

    def to_y(v: float) -> float:
        return TOP + plot_h * (1 - (min(max(v, y_low), y_high) - y_low) / (y_high - y_low))

    has_intervals = any(m.low is not None for m in marks)
    c.legend([(label, fill), *([(INTERVAL_LABEL, INTERVAL)] if has_intervals else []),
              *([(SEGMENT_LABEL, WINDOW)] if segments else [])])
    for t in ticks:
        c.line(LEFT, to_y(t), width - RIGHT, to_y(t), "#e4e4e4")
        c.text(LEFT - 6, to_y(t) + 4, tick_text(t / scale.factor), anchor="end", size=10)
    c.text(LEFT - 6, TOP - 8, scale.unit, anchor="end", size=10, fill="#555")
    for seg in segments:
        x0, x1 = to_x(seg.start - 0.5), to_x(seg.end + 0.5)
        c.add(f'<rect class="segment" x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1.5):.1f}" '
              f'height="{plot_h}" fill="{WINDOW}" fill-opacity="0.10"><title>'
              f"{SEGMENT_LABEL}: experiments {seg.start}–{seg.end}, {esc(seg.text)}"
              "</title></rect>")
        c.text(x0 + 4, TOP + 12, seg.text, size=10, anchor="start", fill=WINDOW)
    for m in marks:
        if m.low is None or m.high is None:
            continue
        x, lo, hi = to_x(m.number), to_y(m.low), to_y(m.high)
        c.add(f'<g class="interval"><title>{esc(m.tooltip)}</title>'
              f'<line x1="{x:.1f}" y1="{lo:.1f}" x2="{x:.1f}" y2="{hi:.1f}" '
              f'stroke="{INTERVAL}" stroke-width="1.1"/>'
              + "".join(f'<line x1="{x - 3:.1f}" y1="{y:.1f}" x2="{x + 3:.1f}" y2="{y:.1f}" '
                        f'stroke="{INTERVAL}" stroke-width="1.1"/>'
                        # No cap where the axis clipped the whisker.
                        for y, v in ((lo, m.low), (hi, m.high)) if y_low < v < y_high)
              + "</g>")
    points = " ".join(f"{to_x(m.number):.1f},{to_y(m.median):.1f}" for m in marks)
    c.add(f'<polyline fill="none" stroke="{fill}" stroke-width="1.4" points="{points}"/>')
    for m in marks:
        c.add(f'<circle class="median" cx="{to_x(m.number):.1f}" cy="{to_y(m.median):.1f}" '
              f'r="2.8" fill="{fill}"><title>{esc(m.tooltip)}</title></circle>')
    for n in _x_ticks(len(marks)):
        c.text(to_x(n), height - bottom + 16, str(n), size=10)
    c.text((LEFT + width - RIGHT) / 2, height - bottom + 34, x_caption, size=10, fill="#555")
    c.line(LEFT, height - bottom, width - RIGHT, height - bottom, "#444")
    return c.render()
