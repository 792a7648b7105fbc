"""Rendering `volbench compare A.db B.db`: warnings first, then B-vs-A verdicts per case."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from volbench.core import metricinfo as metrics
from volbench.report import markdown, terminal
from volbench.report.compare import SetComparison
from volbench.report.jsonout import verdict_json
from volbench.report.table import Table, case_label, metric_cell
from volbench.report.verdicts import DEFAULT_THRESHOLD, percent_of_baseline, ratio_interval

FORMATS = ("table", "markdown", "json")
COLUMNS = (
    "target",
    "workload",
    "case",
    "metric",
    "op",
    "n B/A",
    "B % of A",
    "95 % CI",
    "±T",
    "p",
    "verdict (B vs A)",
)


def comparison_table(sc: SetComparison, wanted: Sequence[str] | None = None) -> Table:
    order = {t: i for i, t in enumerate(sc.a.target_order() + sc.b.target_order())}
    picked = [
        v
        for v in sc.verdicts
        if wanted is None or metrics.selected(v.candidate.metric, v.candidate.unit, wanted)
    ]
    picked.sort(
        key=lambda v: (
            v.candidate.workload,
            str(sorted(v.candidate.params.items())),
            metrics.rank(v.candidate.metric),
            sorted(v.candidate.tags.items()),
            order.get(v.candidate.target, 99),
        )
    )
    rows, classes = [], []
    for v in picked:
        s, c = v.candidate, v.comparison
        label = case_label(s.params, sc.b.varying_params(s.workload))
        cells = (
            ("—", "—", "—", "—")
            if c is None
            else (
                percent_of_baseline(c),
                ratio_interval(c),
                f"{v.threshold * 100:g} %",
                "—"
                if c.p_value is None
                else ("<0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}"),
            )
        )
        rows.append(
            (
                s.target,
                s.workload,
                label,
                metric_cell(s),
                s.op,
                f"{s.summary.n}/{v.baseline.summary.n}",
                *cells,
                v.phrase,
            )
        )
        classes.append(v.verdict.replace(" ", "-") if v.is_verdict else "secondary")
    numeric = tuple(h in ("n B/A", "B % of A", "95 % CI", "±T", "p") for h in COLUMNS)
    family = next((v.family for v in picked if v.family is not None), None)
    title = f"{sc.label_b} vs {sc.label_a}" + (f" ({family.header()})" if family else "")
    return Table(title, COLUMNS, tuple(rows), (), numeric, tuple(classes))


def _header(sc: SetComparison) -> list[str]:
    def names(rep: Any) -> str:
        return ", ".join(f"{e.name} (experiment {e.id})" for e in rep.experiments)

    custom = ", ".join(f"{k} ±{v * 100:g} %" for k, v in sorted(sc.thresholds.items()))
    return [
        f"A: {sc.label_a}: {names(sc.a)}",
        f"B: {sc.label_b}: {names(sc.b)}",
        f"practical threshold ±{DEFAULT_THRESHOLD * 100:g} %" + (f" ({custom})" if custom else ""),
    ]


def render(sc: SetComparison, fmt: str, wanted: Sequence[str] | None = None) -> str:
    table = comparison_table(sc, wanted)
    if fmt == "json":
        return json.dumps(comparison_json(sc, wanted), indent=1, default=str) + "\n"
    if fmt == "markdown":
        parts = [f"# {sc.label_b} vs {sc.label_a}", "", *(f"- {h}" for h in _header(sc)), ""]
        if sc.warnings:
            parts += ["## Warnings", "", *(f"- {w}" for w in sc.warnings), ""]
        parts += [
            "## Verdicts",
            "",
            markdown.render_table(table) if table.rows else "No case is in both sets.",
            "",
        ]
        return "\n".join(parts)
    parts = _header(sc)
    if sc.warnings:
        parts += ["", "Warnings", *(f"- {w}" for w in sc.warnings)]
    parts += ["", terminal.render_table(table) if table.rows else "no case is in both sets"]
    return "\n".join(parts) + "\n"


def comparison_json(sc: SetComparison, wanted: Sequence[str] | None = None) -> dict[str, Any]:
    def side(rep: Any, label: str) -> dict[str, Any]:
        return {
            "label": label,
            "experiments": [{"id": e.id, "name": e.name} for e in rep.experiments],
            "environment": rep.environment,
        }

    rows = [
        v
        for v in sc.verdicts
        if wanted is None or metrics.selected(v.candidate.metric, v.candidate.unit, wanted)
    ]
    return {
        "a": side(sc.a, sc.label_a),
        "b": side(sc.b, sc.label_b),
        "environment_differences": [asdict(d) for d in sc.differences],
        "fingerprint_differences": [{"field": key, "a": values[0], "b": values[-1]}
                                    for key, values in sc.fingerprint_changes],
        "warnings": sc.warnings,
        "thresholds": sc.thresholds,
        "only_a": sc.only_a,
        "only_b": sc.only_b,
        "verdicts": [verdict_json(v) for v in rows],
    }
