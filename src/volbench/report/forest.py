"""The answer as a picture: a forest plot per workload, drawn with the report's SVG code.

One line per target and headline case: the ratio to the baseline (the verdict's ratio of
geometric means) as a dot, its 95 % interval as a line (the Holm-adjusted one the verdict
was judged on), on a log axis so that "2× faster" and "2× slower" are as far from 1; the
band of no practical difference (±threshold) shaded; the verdict in words beside each
line, coloured by what it says. The same words as the answer block (report/answer.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from volbench.report.svg import LEFT, RIGHT, Canvas, Drawing, esc, log_ticks, nice_ticks

ROW_H = 22
GROUP_H = 24
PLOT_W = 340
TOP = 48
BOTTOM = 46
CHAR_W = 6.3  # 11 px system-ui, wide enough for digits and capitals
# Okabe–Ito: bluish green for faster, vermillion for slower; grey for "no difference" and
# the baseline; a dark orange for "not decided" (readable on white).
TONES = {"better": "#009E73", "worse": "#D55E00", "same": "#555555", "open": "#A66300",
         "baseline": "#555555", "none": "#888888"}
BAND = "#56B4E9"


@dataclass(frozen=True)
class ForestRow:
    label: str  # the target
    ratio: float | None  # candidate / baseline; 1 for the baseline itself
    low: float | None
    high: float | None
    words: str  # the verdict in words
    tone: str  # a key of TONES
    fill: str  # the target's colour in every chart
    tooltip: str


@dataclass(frozen=True)
class ForestGroup:
    title: str  # the case: "rand4k — read IOPS"
    threshold: float  # the band: 1 ± threshold
    higher_is_better: bool
    rows: tuple[ForestRow, ...]


def _span(groups: list[ForestGroup]) -> tuple[float, float]:
    values = [1.0]
    for g in groups:
        values += [1.0 - g.threshold, 1.0 + g.threshold]
        for r in g.rows:
            values += [v for v in (r.ratio, r.low, r.high) if v is not None and v > 0]
    low, high = min(values), max(values)
    pad = (high / low) ** 0.06 if high > low else 1.1
    return low / pad, high * pad


def ratio_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks; one a decade over many decades (their labels would overlap); round
    steps around 1 when the span is narrow."""
    ticks = log_ticks(low, high)
    if len(ticks) > 8:
        decades = [t for t in ticks if f"{t:e}".startswith("1.")]
        return decades if len(decades) >= 2 else ticks
    if len(ticks) >= 3:
        return ticks
    step = nice_ticks(high - low, 4)[1]
    start = math.ceil(low / step) * step
    return [round(start + i * step, 10) for i in range(int((high - start) / step) + 1)]


def _tick_text(value: float) -> str:
    return f"{value:g}" if value >= 0.001 else f"{value:.0e}"


def forest_chart(title: str, subtitle: str, groups: list[ForestGroup]) -> Drawing:
    """The plot (module doc): groups of rows top to bottom, one log axis for all."""
    names = max((len(r.label) for g in groups for r in g.rows), default=4)
    words = max((len(r.words) for g in groups for r in g.rows), default=10)
    x0 = max(LEFT, int(16 + CHAR_W * names))
    x1 = x0 + PLOT_W
    rows = sum(len(g.rows) for g in groups)
    c = Canvas(int(x1 + 14 + CHAR_W * words + RIGHT), TOP + GROUP_H * len(groups)
               + ROW_H * rows + BOTTOM, title, subtitle)
    low, high = _span(groups)

    def to_x(v: float) -> float:
        # A ratio interval may reach 0 (a side with a run that completed nothing, issue
        # 32): a log axis has no 0, so such an end is drawn at the axis's left edge.
        v = max(v, low)
        return x0 + PLOT_W * (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))

    bottom = c.height - BOTTOM
    for t in ratio_ticks(low, high):
        c.line(to_x(t), TOP, to_x(t), bottom, "#ececec")
        c.text(to_x(t), bottom + 14, _tick_text(t), size=10)
    c.line(to_x(1.0), TOP, to_x(1.0), bottom, "#444", 1.2)
    c.line(x0, bottom, x1, bottom, "#444")
    y = float(TOP)
    for group in groups:
        y = _group(c, group, y, to_x, x1)
    better = "better →" if groups and groups[0].higher_is_better else "← better"
    c.text((x0 + x1) / 2, bottom + 30, f"ratio to the baseline, log scale ({better})",
           size=10, fill="#555")
    return c.render()


def _group(c: Canvas, group: ForestGroup, y: float, to_x: Callable[[float], float],
           x1: float) -> float:
    """One case: its title, its band of no practical difference, then its rows."""
    c.text(8, y + 15, group.title, anchor="start", size=11, weight="bold")
    top, height = y + GROUP_H - 4, ROW_H * len(group.rows) + 4
    band_lo, band_hi = to_x(1.0 - group.threshold), to_x(1.0 + group.threshold)
    c.add(f'<rect class="band" x="{band_lo:.1f}" y="{top:.1f}" width="{band_hi - band_lo:.1f}" '
          f'height="{height:.1f}" fill="{BAND}" fill-opacity="0.18"><title>no practical '
          f"difference: within ±{group.threshold * 100:g} % of the baseline</title></rect>")
    y += GROUP_H
    for row in group.rows:
        _row(c, row, y + ROW_H / 2, to_x, x1)
        y += ROW_H
    return y


def _row(c: Canvas, row: ForestRow, mid: float, to_x: Callable[[float], float],
         x1: float) -> None:
    tone = TONES.get(row.tone, TONES["none"])
    c.add(f'<g class="row" data-tone="{row.tone}"><title>{esc(row.tooltip)}</title>')
    c.text(8, mid + 4, row.label, anchor="start", size=11)
    if row.low is not None and row.high is not None:
        c.line(to_x(row.low), mid, to_x(row.high), mid, row.fill, 2.2)
        for end in (row.low, row.high):
            c.line(to_x(end), mid - 4, to_x(end), mid + 4, row.fill, 1.6)
        if row.low <= 0.0:  # the interval goes on down to 0, off the log axis: an arrow
            x = to_x(row.low)
            c.add(f'<path class="to-zero" d="M{x + 6:.1f},{mid - 4:.1f} L{x:.1f},{mid:.1f} '
                  f'L{x + 6:.1f},{mid + 4:.1f}" fill="none" stroke="{row.fill}"/>')
    if row.ratio is not None:
        x = to_x(row.ratio)
        if row.tone == "baseline":
            c.add(f'<path d="M{x:.1f},{mid - 5:.1f} L{x + 5:.1f},{mid:.1f} L{x:.1f},'
                  f'{mid + 5:.1f} L{x - 5:.1f},{mid:.1f} Z" fill="#fff" stroke="#444"/>')
        else:
            c.add(f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="4.2" fill="{row.fill}" '
                  'stroke="#222" stroke-width="0.8"/>')
    c.text(x1 + 14, mid + 4, row.words, anchor="start", size=11, fill=tone,
           weight="bold" if row.tone in ("better", "worse") else "normal")
    c.add("</g>")
