"""Load curves shown: the JSON `curves` section, the curve table, and the chart (latency
on a log axis against delivered rate, one line per target, the objective drawn).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from volbench.core.model import canonical_json
from volbench.core.units import format_value
from volbench.report import svg
from volbench.report.cases import CaseSummary
from volbench.report.curves import Curve, CurvePoint
from volbench.report.data import Report
from volbench.report.table import Table, case_label
from volbench.stats import Summary

SLA_COLOR = "#D00000"


def _ci(s: Summary | None) -> list[float] | None:
    return [s.mean_ci.low, s.mean_ci.high] if s is not None and s.mean_ci else None


def _figure_json(s: CaseSummary | None) -> tuple[float | None, list[float] | None]:
    return (None, None) if s is None else (s.summary.mean, _ci(s.summary))


def _point_json(p: CurvePoint, rate: str) -> dict[str, Any]:
    return {"step": p.step, "offered": p.offered.mean if p.offered else None,
            rate: p.rate.mean, f"{rate}_ci": _ci(p.rate),
            "lat_mean": p.lat_mean.mean if p.lat_mean else None,
            "lat_mean_ci": _ci(p.lat_mean), "clat_p99": p.p99,
            "clat_p99_ci": _ci(p.p99_runs), "runs": p.runs}


def curves_json(report: Report) -> list[dict[str, Any]]:
    """One entry per target × workload × case: points, saturation, knee, SLA rate (each
    figure with the 95 % interval of its per-round values), and the search's runs."""
    out = []
    for c in report.curves:
        rate = c.rate_name
        sat, sat_ci = _figure_json(c.saturation)
        knee, knee_ci = _figure_json(c.knee)
        sla, sla_ci = _figure_json(c.sla_rate)
        out.append({
            "target": c.target, "workload": c.workload, "params": dict(c.params),
            "points": [_point_json(p, rate) for p in c.points],
            f"saturation_{rate}": sat, f"saturation_{rate}_ci": sat_ci,
            f"knee_{rate}": knee, f"knee_{rate}_ci": knee_ci,
            "sla": dict(c.sla) if c.sla else None, f"sla_{rate}": sla, f"sla_{rate}_ci": sla_ci,
            "sla_missed_rounds": list(c.sla_missed),
            "search": [{"repetition": p.repetition, "step": p.step, "offered": p.offered,
                        rate: p.rate, "latency": p.latency, "met": p.met} for p in c.search],
        })
    return out


def _interval(s: Summary | None, unit: str) -> str:
    if s is None:
        return "—"
    ci = s.mean_ci
    text = format_value(s.mean, unit)
    return f"{text} [{format_value(ci.low, unit)}, {format_value(ci.high, unit)}]" if ci \
        else text


def _sla_text(c: Curve) -> str:
    return f"{c.sla['stat']} ≤ {format_value(float(c.sla['limit']), 's')}" if c.sla else ""


def curve_tables(report: Report, workload: str) -> list[Table]:
    """Per curve: a row per step (offered, delivered, mean and p99 latency), then a line
    with saturation, knee and the rate within the objective."""
    tables = []
    shown = [k for k in report.varying_params(workload) if k != "load"]
    for c in (c for c in report.curves if c.workload == workload):
        rate = "IOPS" if c.rate_name == "iops" else "tps"
        rows = tuple((p.step, format_value(p.offered.mean, c.unit) if p.offered else
                      "unthrottled", _interval(p.rate, c.unit), _interval(p.lat_mean, "s"),
                      format_value(p.p99, "s"), str(p.runs)) for p in c.points)
        facts = [f"saturation {_interval(c.saturation.summary if c.saturation else None, c.unit)}",
                 f"knee {_interval(c.knee.summary if c.knee else None, c.unit)}"]
        if c.sla:
            facts.append(f"within {_sla_text(c)}: "
                         f"{_interval(c.sla_rate.summary if c.sla_rate else None, c.unit)}"
                         + (f" (missed at every load in round(s) "
                            f"{', '.join(map(str, c.sla_missed))})" if c.sla_missed else ""))
        label = case_label(c.params, shown)
        title = f"Load curve — {c.target}, {workload} {label}".strip() + ": " + "; ".join(facts)
        tables.append(Table(title, ("step", "offered", f"{rate} [95 % CI]",
                                    "mean latency [95 % CI]", "p99 (merged)", "runs"),
                            rows, (), (False, True, True, True, True, True)))
    return tables


@dataclass(frozen=True)
class CurveLine:
    name: str
    fill: str
    # (delivered rate, p99, mean latency, tooltip) per point, by offered rate.
    points: tuple[tuple[float, float | None, float | None, str], ...]


def curve_svg(title: str, subtitle: str, unit: str, lines: Sequence[CurveLine],
              sla: tuple[str, float] | None) -> svg.Drawing:
    """p99 (solid) and mean (dashed) latency on a log axis against delivered rate."""
    c = svg.Canvas(640, 340, title, subtitle)
    width, height, bottom = c.width, c.height, 40
    plot_h = height - svg.TOP - bottom
    lats = [v for ln in lines for _, p, m, _ in ln.points for v in (p, m) if v and v > 0]
    if sla:
        lats.append(sla[1])
    low, high = (min(lats) / 1.5, max(lats) * 1.5) if lats else (1e-4, 1e-1)
    x_max = max((x for ln in lines for x, *_ in ln.points), default=1.0) * 1.08 or 1.0
    x_scale = svg.axis_scale(x_max, unit)
    x_ticks = svg.nice_ticks(x_max / x_scale.factor)
    x_top = x_ticks[-1] * x_scale.factor
    y_scale = svg.axis_scale(high, "s")

    def to_x(v: float) -> float:
        return svg.LEFT + (width - svg.LEFT - svg.RIGHT) * v / x_top

    def to_y(v: float) -> float:
        span = math.log10(high) - math.log10(low)
        return svg.TOP + plot_h * (1 - (math.log10(v) - math.log10(low)) / span)

    legend = [(ln.name, ln.fill) for ln in lines]
    c.legend([*legend, *([(f"SLA {sla[0]}", SLA_COLOR)] if sla else [])])
    ticks = svg.log_ticks(low / y_scale.factor, high / y_scale.factor)
    svg._y_axis(c, [t * y_scale.factor for t in ticks], to_y, y_scale, width - svg.RIGHT)
    for t in x_ticks:
        c.text(to_x(t * x_scale.factor), height - bottom + 16, svg.tick_text(t), size=10)
    c.text(width - svg.RIGHT, height - bottom + 30, f"delivered ({x_scale.unit})",
           anchor="end", size=10, fill="#555")
    if sla:
        y = to_y(sla[1])
        c.line(svg.LEFT, y, width - svg.RIGHT, y, SLA_COLOR, 1.5, "6 4")
        c.text(width - svg.RIGHT - 4, y - 4, f"SLA {sla[0]} {format_value(sla[1], 's')}",
               anchor="end", size=10, fill=SLA_COLOR)
    for ln in lines:
        _draw(c, ln, to_x, to_y)
    c.line(svg.LEFT, height - bottom, width - svg.RIGHT, height - bottom, "#444")
    return c.render()


def _draw(c: svg.Canvas, ln: CurveLine, to_x: Callable[[float], float],
          to_y: Callable[[float], float]) -> None:
    """One target: p99 solid with a dot (and tooltip) per point, mean dashed."""
    for which, dash in ((1, ""), (2, "4 3")):
        pts = [(to_x(pt[0]), to_y(v)) for pt in ln.points
               if isinstance(v := pt[which], float) and v > 0]
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        stroke = 1.2 if dash else 2
        c.add(f'<polyline fill="none" stroke="{ln.fill}" stroke-width="{stroke}"{extra} '
              'points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
    for x, p99, _, tip in ln.points:
        if p99 and p99 > 0:
            c.add(f'<circle cx="{to_x(x):.1f}" cy="{to_y(p99):.1f}" r="3.5" '
                  f'fill="{ln.fill}"><title>{svg.esc(ln.name)}: {svg.esc(tip)}</title>'
                  "</circle>")


def curve_charts(report: Report, workload: str, fill: Any
                 ) -> list[tuple[str, str, svg.Drawing]]:
    """(slug parts, title, drawing) per case of `workload` with curves, one line per target;
    `fill(target)` gives a target's colour."""
    groups: dict[str, list[Curve]] = {}
    for c in report.curves:
        if c.workload == workload:
            groups.setdefault(canonical_json(dict(c.params)), []).append(c)
    shown = [k for k in report.varying_params(workload) if k != "load"]
    out = []
    for members in groups.values():
        first = members[0]
        lines = [CurveLine(c.target, fill(c.target), tuple(
            (p.rate.mean, p.p99, p.lat_mean.mean if p.lat_mean else None,
             f"{p.step}: {format_value(p.rate.mean, c.unit)}, p99 {format_value(p.p99, 's')}, "
             f"mean {format_value(p.lat_mean.mean if p.lat_mean else None, 's')}")
            for p in first_steps(c))) for c in members]
        label = case_label(first.params, shown)
        name = "IOPS" if first.rate_name == "iops" else "tps"
        title = f"Latency vs {name} — {workload} {label}".strip()
        sla = (str(first.sla["stat"]), float(first.sla["limit"])) if first.sla else None
        note = ("p99 of all I/Os of a step (solid, dots) and mean (dashed) against the rate "
                "delivered; log latency axis")
        markup = curve_svg(title, note, first.unit, lines, sla)
        out.append((f"{label}-latency-curve".lstrip("-"), title, markup))
    return out


def first_steps(c: Curve) -> list[CurvePoint]:
    """The points a line is drawn through: the steps and the saturation run (probes sit
    at rates chosen by the search and are listed in the table and JSON)."""
    return [p for p in c.points if not p.step.startswith("sla-")]
