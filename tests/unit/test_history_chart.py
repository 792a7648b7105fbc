"""The `volbench history` chart (report/historychart.py) on awkward lines."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from volbench.report.historychart import Mark, Segment, history_chart

NS = "{http://www.w3.org/2000/svg}"


def drawn(marks: list[Mark], segments: tuple[Segment, ...] = ()) -> ElementTree.Element:
    return ElementTree.fromstring(history_chart("t", "s", "op/s", "line", "#000", marks,
                                                segments).text)


@pytest.mark.parametrize("median", [0.0, 5.0, 1e9])
def test_one_experiment_or_a_flat_line_draws_without_an_interval(median: float) -> None:
    svg = drawn([Mark(1, median, None, None, "only"), Mark(2, median, None, None, "again")])
    assert not [g for g in svg.iter(NS + "g") if g.get("class") == "interval"]
    assert "95 % interval of the mean" not in [t.text for t in svg.iter(NS + "text")]
    assert len([c for c in svg.iter(NS + "circle") if c.get("class") == "median"]) == 2


def test_a_two_run_interval_is_clipped_at_the_axis_not_the_axis_stretched() -> None:
    marks = [Mark(i, 1000.0 + i, 990.0 + i, 1010.0 + i, f"e{i}") for i in range(1, 11)]
    marks[4] = Mark(5, 1005.0, -5000.0, 7000.0, "two runs")  # t(0.975, 1) = 12.7
    svg = drawn(marks, (Segment(6, 10, "change +1.0 %"),))
    ticks = [float(t.text or "") for t in svg.iter(NS + "text")
             if t.get("text-anchor") == "end" and (t.text or "").replace(".", "").isdigit()]
    assert min(ticks) >= 900 and max(ticks) <= 1100
    wide = next(g for g in svg.iter(NS + "g") if g.findtext(NS + "title") == "two runs")
    assert len(wide.findall(NS + "line")) == 1  # the whisker, no caps: it runs off the axis
