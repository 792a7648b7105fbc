"""The answer as a picture (report/forest.py, charts.forest_charts) and the bar charts'
log axis. In Chromium, with screenshots: tests/system/test_html_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

from support import load, make_db, make_run
from volbench.report import charts, svg
from volbench.report.forest import ratio_ticks


def _report(tmp_path: Path, scales: dict[str, float], job: bool = False) -> object:
    """IOPS of a random-read case, or a job's real time (lower is better)."""
    runs = [make_run(t, {"real": 10.0 * s * (1 + 0.01 * rep)} if job
                     else {"iops": 1000.0 * s * (1 + 0.01 * rep)}, rep,
                     started=rep * 100.0 + i,
                     params={} if job else {"rw": "randread", "bs": "4k"},
                     tags={} if job else None)
            for rep in (1, 2, 3, 4) for i, (t, s) in enumerate(scales.items())]
    return load(make_db(tmp_path / "r.db", runs, document={"name": "f", "baseline": "xfs"}))


def test_one_line_per_target_with_its_verdict_beside_it(tmp_path: Path) -> None:
    rep = _report(tmp_path, {"xfs": 1.0, "same": 1.0, "fast": 2.0, "slow": 0.02})
    (chart,) = charts.forest_charts(rep, "w")  # type: ignore[arg-type]
    text = chart.svg
    assert chart.kind == "forest" and chart.slug == "w-answer"
    tones = re.findall(r'<g class="row" data-tone="(\w+)"', text)
    assert tones == ["baseline", "same", "better", "worse"]
    assert "no difference beyond ±2 %" in text and "× faster" in text and "× slower" in text
    assert text.count('class="band"') == 1 and "better →" in text
    # a dot per compared target (not the baseline, a diamond), an interval line each
    assert text.count("<circle") == 3 and text.count("<path") == 1
    assert all(tick in text for tick in (">0.02<", ">0.1<", ">1<", ">2<"))


def test_for_a_time_lower_is_better_and_the_axis_says_so(tmp_path: Path) -> None:
    rep = _report(tmp_path, {"xfs": 1.0, "slow": 2.0}, job=True)
    (chart,) = charts.forest_charts(rep, "w")  # type: ignore[arg-type]
    assert "← better" in chart.svg and 'data-tone="worse"' in chart.svg


def test_no_picture_without_a_baseline_to_compare_with(tmp_path: Path) -> None:
    runs = [make_run("xfs", {"iops": 1000.0 + rep}, rep, started=rep * 10.0,
                     params={"rw": "randread"}) for rep in (1, 2, 3)]
    rep = load(make_db(tmp_path / "one.db", runs))
    assert charts.forest_charts(rep, "w") == []


def test_ticks_one_a_decade_when_wide_and_round_steps_when_narrow() -> None:
    assert ratio_ticks(0.0008, 12.0) == [0.001, 0.01, 0.1, 1.0, 10.0]
    assert ratio_ticks(0.3, 3.0) == [0.5, 1.0, 2.0]
    narrow = ratio_ticks(0.97, 1.04)
    assert len(narrow) >= 3 and 1.0 in narrow and all(0.97 <= t <= 1.04 for t in narrow)


def _bars(values: list[float]) -> str:
    group = svg.BarGroup("4k", tuple(svg.Bar(i, v, v * 0.9, v * 1.1, (v,), f"t{i}")
                                     for i, v in enumerate(values)))
    return svg.bar_chart("IOPS", "higher is better", "op/s",
                         [(f"t{i}", svg.color(i)) for i in range(len(values))], [group]).text


def test_bars_get_a_log_axis_when_values_span_more_than_ten_times() -> None:
    wide = _bars([25000.0, 24000.0, 500.0])
    assert "log scale" in wide
    labels = re.findall(r'text-anchor="end" font-weight="normal" fill="#222">([\d,]+)<', wide)
    assert {"500", "1000", "10,000"} <= set(labels)
    # the 500-IOPS bar is a bar, not a sliver: at least a fifth of the plot high
    heights = [float(h) for h in re.findall(r'height="([\d.]+)" fill="#\w+" '
                                            r'fill-opacity="0.8"', wide)]
    assert len(heights) == 3
    assert min(heights) > 0.2 * max(heights)
    narrow = _bars([25000.0, 24000.0, 5000.0])
    assert "log scale" not in narrow
