"""SVG charts drawn by hand: grouped bars with intervals and runs, percentile lines, time series.

Standalone SVG (xmlns, presentation attributes, no CSS classes needed), so the same
markup is inlined into the HTML report and written as .svg files. Tooltips are SVG
<title> elements: no script needed. Colours are the Okabe–Ito palette, readable with
the common colour-vision deficiencies.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C6D1F", "#000000")
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
STALL = "#D00000"
# Burst and warm-up windows (report/timeline.py): a calm blue behind the lines.
WINDOW = "#2060C0"
LEFT, RIGHT, TOP = 72, 16, 64
LEGEND_Y = 48


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Scale:
    """How axis numbers are shown: value / factor, in `unit`."""

    factor: float
    unit: str


_STEPS = {
    "B/s": [(1024.0**3, "GiB/s"), (1024.0**2, "MiB/s"), (1024.0, "KiB/s"), (1.0, "B/s")],
    "B": [(1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"), (1.0, "B")],
    "s": [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")],
}


def axis_scale(largest: float, unit: str) -> Scale:
    for factor, name in _STEPS.get(unit, []):
        if abs(largest) >= factor:
            return Scale(factor, name)
    steps = _STEPS.get(unit)
    return Scale(steps[-1][0], steps[-1][1]) if steps else Scale(1.0, unit)


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """0 and round steps up to at least `high`."""
    if high <= 0:
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < high * (1 - 1e-9):
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks spanning [low, high] (both > 0)."""
    out = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**exponent
            if low * 0.999 <= v <= high * 1.001:
                out.append(v)
    return out or [low, high]


def tick_text(value: float) -> str:
    if value == 0:
        return "0"
    a = abs(value)
    if a >= 10000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Drawing:
    """A finished chart: its SVG text and the size it was drawn at (CSS pixels)."""

    text: str
    width: int
    height: int


@dataclass
class Canvas:
    width: int
    height: int
    title: str
    subtitle: str = ""
    parts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Wide enough for the title: a clipped title is worse than a wide chart.
        self.width = max(self.width, int(LEFT + 7.2 * max(len(self.title), len(self.subtitle))))

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: int = 11,
        anchor: str = "middle",
        weight: str = "normal",
        fill: str = "#222",
        rotate: float = 0,
    ) -> None:
        turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
        self.add(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}"{turn}>{esc(text)}</text>'
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        stroke: str = "#888",
        width: float = 1,
        dash: str = "",
    ) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{stroke}" stroke-width="{width:g}"{extra}/>'
        )

    def legend(self, names: Sequence[tuple[str, str]], y: float = LEGEND_Y) -> None:
        x = float(LEFT)
        for name, fill in names:
            self.add(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{fill}"/>')
            self.text(x + 14, y, name, anchor="start")
            x += 24 + 6.5 * len(name)

    def render(self) -> Drawing:
        return Drawing(
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
            f'width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="{esc(FONT)}">'
            f"<title>{esc(self.title)}</title>"
            f'<rect width="100%" height="100%" fill="#fff"/>'
            f'<text x="{LEFT}" y="16" font-size="13" font-weight="bold" fill="#111">'
            f"{esc(self.title)}</text>"
            f'<text x="{LEFT}" y="31" font-size="11" fill="#555">{esc(self.subtitle)}</text>'
            + "".join(self.parts)
            + "</svg>",
            self.width,
            self.height,
        )


def _y_axis(
    c: Canvas,
    ticks: Sequence[float],
    to_y: Callable[[float], float],
    scale: Scale,
    right: float,
    labels: Sequence[str] | None = None,
) -> None:
    for i, t in enumerate(ticks):
        y = to_y(t)
        c.line(LEFT, y, right, y, "#e4e4e4")
        c.text(
            LEFT - 6,
            y + 4,
            labels[i] if labels else tick_text(t / scale.factor),
            anchor="end",
            size=10,
        )
    c.text(LEFT - 6, TOP - 8, scale.unit, anchor="end", size=10, fill="#555")


# -- grouped bars ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    series: int  # index into the chart's series (colour and legend)
    mean: float
    low: float | None
    high: float | None
    points: tuple[float, ...]
    tooltip: str


@dataclass(frozen=True)
class BarGroup:
    label: str
    bars: tuple[Bar, ...]


def bar_chart(
    title: str,
    subtitle: str,
    unit: str,
    series: Sequence[tuple[str, str]],
    groups: Sequence[BarGroup],
) -> Drawing:
    """Bars (mean) per series within each group, 95 % interval whiskers, runs as dots; on
    a log axis when the values span more than LOG_SPAN (a 500-IOPS disk class beside
    25,000 IOPS is a sliver on a linear one)."""
    per_group = max(1, max((len(g.bars) for g in groups), default=1))
    bar_w = 18.0 if per_group * len(groups) < 30 else 12.0
    longest = max((len(g.label) for g in groups), default=0)
    # The axis fits the means and the runs; an interval reaching beyond (n = 2 gives
    # t = 12.7) is clipped with an arrow rather than squashing every bar.
    values = [v for g in groups for b in g.bars for v in (b.mean, *b.points)]
    log = bool(values) and min(values) > 0 and max(values) / min(values) > LOG_SPAN
    c = Canvas(
        int(max(420, LEFT + RIGHT + (per_group * bar_w + 26) * len(groups))), 0, title,
        subtitle + ("; log scale" if log else "")
    )
    # Groups share the plot width evenly (the title may have widened the canvas).
    group_w = (c.width - LEFT - RIGHT) / max(1, len(groups))
    bar_w = min(bar_w * 2, (group_w - 26) / per_group)
    rotate = longest * 6 > group_w
    bottom = 30 + (min(longest, 40) * 5 if rotate else 0)
    c.height = height = 300 + bottom
    plot_h = height - TOP - bottom
    if log:
        to_y, ticks, scale = _log_axis(values, unit, plot_h)
    else:
        to_y, ticks, scale = _linear_axis(values, unit, plot_h)
    c.legend(series)
    _y_axis(c, ticks, to_y, scale, c.width - RIGHT)
    for gi, group in enumerate(groups):
        x0 = LEFT + gi * group_w + (group_w - len(group.bars) * bar_w) / 2
        for bi, bar in enumerate(group.bars):
            x = x0 + bi * bar_w
            _bar(c, bar, x, bar_w, to_y, series[bar.series][1])
        cx = x0 + len(group.bars) * bar_w / 2
        if rotate:
            c.text(cx, TOP + plot_h + 14, group.label, anchor="end", size=10, rotate=-35)
        else:
            c.text(cx, TOP + plot_h + 16, group.label, size=10)
    c.line(LEFT, TOP + plot_h, c.width - RIGHT, TOP + plot_h, "#444")
    return c.render()


# Values spanning more than this factor get a log axis.
LOG_SPAN = 10.0


def _linear_axis(values: Sequence[float], unit: str, plot_h: float
                 ) -> tuple[Callable[[float], float], list[float], Scale]:
    top = max(values, default=1.0) * 1.25 or 1.0
    scale = axis_scale(top, unit)
    ticks = nice_ticks(top / scale.factor)
    top = ticks[-1] * scale.factor

    def to_y(v: float) -> float:
        return TOP + plot_h * (1 - max(0.0, min(v, top)) / top)

    return to_y, [t * scale.factor for t in ticks], scale


def _log_axis(values: Sequence[float], unit: str, plot_h: float
              ) -> tuple[Callable[[float], float], list[float], Scale]:
    """A log axis from below the smallest value to above the largest; a bar starts at its
    bottom, and anything below it (an interval reaching 0) is drawn to the bottom."""
    # From the decade below half the smallest value: the smallest bar is a bar, not a
    # sliver at the axis's foot.
    low, top = 10.0 ** math.floor(math.log10(min(values) / 2)), max(values) * 1.6
    scale = axis_scale(top, unit)
    ticks = [t * scale.factor for t in log_ticks(low / scale.factor, top / scale.factor)]
    span = math.log10(top) - math.log10(low)

    def to_y(v: float) -> float:
        v = min(max(v, low), top)
        return TOP + plot_h * (1 - (math.log10(v) - math.log10(low)) / span)

    return to_y, ticks, scale


def _bar(
    c: Canvas, bar: Bar, x: float, width: float, to_y: Callable[[float], float], fill: str
) -> None:
    y = to_y(bar.mean)
    base = to_y(0.0)
    c.add(
        f'<g><title>{esc(bar.tooltip)}</title><rect x="{x + 1:.1f}" y="{y:.1f}" '
        f'width="{width - 2:.1f}" height="{max(base - y, 0.5):.1f}" fill="{fill}" '
        f'fill-opacity="0.8"/></g>'
    )
    mid = x + width / 2
    if bar.low is not None and bar.high is not None:
        lo, hi = to_y(bar.low), to_y(bar.high)
        c.line(mid, lo, mid, hi, "#222", 1.2)
        if hi <= TOP + 0.5:  # clipped at the top of the axis: an arrow, not a cap
            c.add(
                f'<path d="M{mid - 4:.1f},{TOP + 6} L{mid:.1f},{TOP} L{mid + 4:.1f},{TOP + 6}"'
                ' fill="none" stroke="#222" stroke-width="1.2"/>'
            )
        else:
            c.line(mid - 4, hi, mid + 4, hi, "#222", 1.2)
        if lo < to_y(0.0) - 0.5:
            c.line(mid - 4, lo, mid + 4, lo, "#222", 1.2)
    n = len(bar.points)
    for i, v in enumerate(bar.points):
        # Spread the dots across the bar deterministically so equal values stay visible.
        dx = 0.0 if n == 1 else (i / (n - 1) - 0.5) * (width - 8)
        c.add(
            f'<circle cx="{mid + dx:.1f}" cy="{to_y(v):.1f}" r="2.3" fill="#111" '
            f'fill-opacity="0.65"/>'
        )


# -- percentiles -------------------------------------------------------------------------


def percentile_chart(
    title: str,
    subtitle: str,
    unit: str,
    percentiles: Sequence[float],
    lines: Sequence[tuple[str, str, Sequence[float | None]]],
) -> Drawing:
    """One line per series over p50 … p99.99 on a log latency axis."""
    width, height, bottom = 560, 300, 36
    plot_h = height - TOP - bottom
    found = [v for _, _, vs in lines for v in vs if v is not None and v > 0]
    low, high = (min(found), max(found)) if found else (1.0, 10.0)
    low, high = low / 1.3, high * 1.3
    scale = axis_scale(high, unit)

    def to_y(v: float) -> float:
        span = math.log10(high) - math.log10(low)
        return TOP + plot_h * (1 - (math.log10(v) - math.log10(low)) / span)

    c = Canvas(width, height, title, subtitle)
    width = c.width
    step = (width - LEFT - RIGHT) / max(1, len(percentiles))
    c.legend([(name, fill) for name, fill, _ in lines])
    ticks = log_ticks(low / scale.factor, high / scale.factor)
    _y_axis(c, [t * scale.factor for t in ticks], to_y, scale, width - RIGHT)
    for i, p in enumerate(percentiles):
        c.text(LEFT + step * (i + 0.5), height - bottom + 16, f"p{p:g}", size=10)
    for name, fill, values in lines:
        pts = [
            (LEFT + step * (i + 0.5), to_y(v), v)
            for i, v in enumerate(values)
            if v is not None and v > 0
        ]
        c.add(
            f'<polyline fill="none" stroke="{fill}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
            + '"/>'
        )
        for (x, y, v), p in zip(pts, percentiles, strict=False):
            c.add(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{fill}"><title>'
                f"{esc(name)} p{p:g}: {tick_text(v / scale.factor)} {esc(scale.unit)}"
                f"</title></circle>"
            )
    c.line(LEFT, height - bottom, width - RIGHT, height - bottom, "#444")
    return c.render()


# -- time series -------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    label: str  # tooltip: "xfs rep 2"
    fill: str
    points: tuple[tuple[float, float], ...]
    stalls: tuple[tuple[float, float], ...] = ()  # (start, end) seconds
    # Burst / warm-up windows: (start, end seconds, "burst 2,480 IOPS for 24 s").
    windows: tuple[tuple[float, float, str], ...] = ()


def series_chart(
    title: str, subtitle: str, unit: str, legend: Sequence[tuple[str, str]],
    traces: Sequence[Trace], windows_label: str = "burst / warm-up",
) -> Drawing:
    """Rate over time, one thin line per run; stalls shaded in red, windows in blue under
    the legend entry `windows_label` (bursts, fault phases: what the windows are)."""
    c = Canvas(720, 300, title, subtitle)
    width, height, bottom = c.width, c.height, 36
    plot_h = height - TOP - bottom
    times = [t for tr in traces for t, _ in tr.points] or [0.0, 1.0]
    t_max = max(max(times), 1e-9)
    v_max = max((v for tr in traces for _, v in tr.points), default=1.0) * 1.05 or 1.0
    scale = axis_scale(v_max, unit)
    ticks = nice_ticks(v_max / scale.factor)
    v_top = ticks[-1] * scale.factor

    def to_x(t: float) -> float:
        return LEFT + (width - LEFT - RIGHT) * max(0.0, t) / t_max

    def to_y(v: float) -> float:
        return TOP + plot_h * (1 - v / v_top)

    has_stalls = any(tr.stalls for tr in traces)
    has_windows = any(tr.windows for tr in traces)
    c.legend([*legend, *([("stall", STALL)] if has_stalls else []),
              *([(windows_label, WINDOW)] if has_windows else [])])
    _y_axis(c, [t * scale.factor for t in ticks], to_y, scale, width - RIGHT)
    for tr in traces:  # burst and warm-up windows, under everything else
        for start, end, text in tr.windows:
            c.add(
                f'<rect class="window" x="{to_x(start):.1f}" y="{TOP}" '
                f'width="{max(to_x(end) - to_x(start), 1.5):.1f}" height="{plot_h}" '
                f'fill="{WINDOW}" fill-opacity="0.10"><title>{esc(tr.label)}: {esc(text)}'
                "</title></rect>"
            )
    # The levels in words once, at the first window (every window has them as a tooltip).
    first = next(((tr.label, w) for tr in traces for w in tr.windows), None)
    if first is not None:
        label, (start, _, text) = first
        c.text(to_x(start) + 4, TOP + 12, f"{label}: {text}", size=10, anchor="start",
               fill=WINDOW)
    for tr in traces:
        for start, end in tr.stalls:
            c.add(
                f'<rect class="stall" x="{to_x(start):.1f}" y="{TOP}" '
                f'width="{max(to_x(end) - to_x(start), 1.5):.1f}" height="{plot_h}" '
                f'fill="{STALL}" fill-opacity="0.15"><title>{esc(tr.label)}: stall '
                f"{start:g}–{end:g} s</title></rect>"
            )
    for tr in traces:
        pts = " ".join(f"{to_x(t):.1f},{to_y(v):.1f}" for t, v in tr.points)
        c.add(
            f'<polyline fill="none" stroke="{tr.fill}" stroke-width="1.3" '
            f'stroke-opacity="0.85" points="{pts}"><title>{esc(tr.label)}</title></polyline>'
        )
    for t in nice_ticks(t_max, 6):
        if t <= t_max:
            c.text(to_x(t), height - bottom + 16, f"{t:g} s", size=10)
    c.line(LEFT, height - bottom, width - RIGHT, height - bottom, "#444")
    return c.render()
