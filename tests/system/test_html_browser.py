"""The HTML report in headless Chromium: it renders, charts are there, no console errors.

Needs Debian's chromium (`apt-get install chromium`); without it these tests skip (or
fail under VOLBENCH_TESTS_STRICT=1).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

import browser
from support import DATA, load, make_db, make_run, need, tool
from volbench import report
from volbench.cli.main import main
from volbench.core.model import Histogram, Parsed, RunResult, Series, Status

TARGETS = (("xfs", 1.0), ("ext4", 1.1), ("nfs", 0.5))
SIZES = ("64M", "256M")


def _extra(scale: float, stall: bool) -> Parsed:
    rate = 1000.0 * scale
    points = tuple((float(t), 0.0 if stall and t in (4, 5) else rate) for t in range(1, 9))
    bins = ((100e-6 / scale, 900), (400e-6 / scale, 90), (2e-3 / scale, 10))
    return Parsed(
        (),
        (Series("iops", "op/s", points, {"op": "read"}),),
        (Histogram("clat", "s", bins, {"op": "read"}),),
    )


def rich_runs() -> list[RunResult]:
    """3 targets × 2 working-set sizes × 3 reps, with series, histograms, a stall, a failure."""
    runs = []
    t = 0.0
    for rep in (1, 2, 3):
        for size in SIZES:
            for target, scale in TARGETS:
                iops = 1000.0 * scale * (1 + 0.01 * rep)
                stall = target == "nfs" and rep == 2 and size == "256M"
                runs.append(
                    make_run(
                        target,
                        {
                            "iops": iops,
                            "bw": iops * 4096,
                            "lat_mean": 0.001 / scale,
                            "io_bytes": iops * 4096 * 8,
                        },
                        rep,
                        started=t,
                        params={"bs": "4k", "rw": "randread", "size": size},
                        parsed_extra=_extra(scale, stall),
                        annotations={
                            "device_io": {"read_bytes": int(iops * 4096 * 8)},
                            "working_set_bytes": 64 * 1024**2 if size == "64M" else 256 * 1024**2,
                        },
                    )
                )
                t += 10
    runs.append(
        make_run(
            "nfs",
            {},
            4,
            started=t,
            status=Status.TIMEOUT,
            params={"bs": "4k", "rw": "randread", "size": "64M"},
            error="killed after the 60 s timeout",
        )
    )
    return runs


# The answer's forest plot; 3 charted metrics (IOPS, throughput, mean latency), each one
# chart with the 2 sizes as groups; plus per case (2 sizes) one percentile chart and one
# time-series chart.
EXPECTED_CHARTS = 1 + 3 + 2 + 2


@pytest.fixture
def html_file(tmp_path: Path) -> Path:
    db = make_db(tmp_path / "rich.db", rich_runs(), document={"name": "rich", "baseline": "xfs"})
    out = tmp_path / "report.html"
    assert main(["report", "--db", str(db), "--format", "html", "-o", str(out)]) == 0
    return out


def test_html_is_self_contained(html_file: Path) -> None:
    text = html_file.read_text()
    assert text.startswith("<!DOCTYPE html>")
    # Nothing to fetch: no external scripts, styles, images or fonts.
    assert not re.search(r"""<(script|img|link|iframe)[^>]*\b(src|href)=""", text)
    assert "@import" not in text and "url(" not in text
    assert re.findall(r"https?://[^\s\"'<>]+", text) == ["http://www.w3.org/2000/svg"] * text.count(
        'xmlns="http://www.w3.org/2000/svg"'
    )
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == EXPECTED_CHARTS
    assert (
        text.index('id="verdicts"')
        < text.index('id="warnings"')
        < text.index('id="workload-w"')
        < text.index('id="runs"')
        < text.index('id="environment"')
    )


def _chromium() -> None:
    need(browser.find_chromium() is not None, "chromium is not installed")


def _leftover_browsers() -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "volbench-chromium-" in text:
            found.append(text.replace("\0", " ")[:120])
    return found


def test_html_renders_in_chromium(html_file: Path, tmp_path: Path) -> None:
    _chromium()
    shot = tmp_path / "report.png"
    with browser.page(timeout=60) as page:
        page.open(html_file.as_uri())
        charts = page.evaluate("""Array.from(document.querySelectorAll('svg.chart')).map(
            s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; })""")
        assert len(charts) == EXPECTED_CHARTS
        assert all(w > 300 and h > 200 for w, h in charts)
        assert page.evaluate("document.querySelectorAll('rect.stall').length") == 1
        rows = page.evaluate("document.querySelectorAll('#verdict-table tbody tr').length")
        assert rows == 2 * 2 * 3  # 2 candidates × 2 sizes × (iops, bw, lat_mean)
        # The filter box (the page's only script) hides rows that do not match.
        page.evaluate("""(() => { const box = document.querySelector(
            'input[data-table="verdict-table"]'); box.value = 'ext4 64M';
            box.dispatchEvent(new Event('input')); })()""")
        visible = page.evaluate("""Array.from(document.querySelectorAll(
            '#verdict-table tbody tr')).filter(r => !r.classList.contains('hidden'))
            .map(r => r.textContent)""")
        assert len(visible) == 3 and all("ext4" in r and "64M" in r for r in visible)
        assert page.console_errors() == []
        height = page.evaluate("document.documentElement.scrollHeight")
        page.screenshot(shot, 1280, min(int(height), 4000))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert struct.unpack(">II", data[16:24]) == (1280, min(int(height), 4000))
    assert _leftover_browsers() == []


def test_console_errors_are_caught(tmp_path: Path) -> None:
    """The check itself must be able to fail: a page with a broken script."""
    _chromium()
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><p>x</p><script>console.error('boom'); undefinedCall();</script>"
    )
    with browser.page(timeout=60) as page:
        page.open(bad.as_uri())
        errors = page.console_errors()
    assert any("boom" in e for e in errors) and len(errors) == 2


def test_charts_as_svg_and_png_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool("rsvg-convert")
    db = make_db(tmp_path / "rich.db", rich_runs(), document={"name": "rich", "baseline": "xfs"})
    out = tmp_path / "charts"
    assert main(["report", "--db", str(db), "--charts", str(out), "--png"]) == 0
    assert capsys.readouterr().out == f"wrote {2 * EXPECTED_CHARTS} chart file(s) to {out}\n"
    svgs = sorted(out.glob("*.svg"))
    pngs = sorted(out.glob("*.png"))
    assert len(svgs) == len(pngs) == EXPECTED_CHARTS
    assert (out / "w-iops.svg").read_text().startswith("<svg xmlns=")
    width, height = (
        int(x)
        for x in re.search(  # type: ignore[union-attr]
            r'width="(\d+)" height="(\d+)"', (out / "w-iops.svg").read_text()
        ).groups()
    )
    png = (out / "w-iops.png").read_bytes()
    assert struct.unpack(">II", png[16:24]) == (2 * width, 2 * height)  # 2× device pixels
    assert _leftover_browsers() == []


def test_report_for_the_rich_database_warns(tmp_path: Path) -> None:
    rep = load(make_db(tmp_path / "rich.db", rich_runs(), document={"name": "rich"}))
    kinds = {w.kind for w in rep.warnings}
    assert {"failed-runs", "stall"} <= kinds
    text = report.render(rep, "table")
    assert "1 run(s) did not finish OK (1 timeout)" in text


def test_the_answer_is_a_picture_first_in_chromium(tmp_path: Path) -> None:
    """The answer section opens with a forest plot per workload (ratio to the baseline,
    its interval, the threshold band, the verdict in words beside each line), then the
    answer in words; the bar chart of a 500-IOPS class beside ~20k IOPS has a log axis."""
    _chromium()
    db = tmp_path / "d.db"
    db.write_bytes((DATA / "reports" / "default-experiment.db").read_bytes())
    out = tmp_path / "answer.html"
    assert main(["report", "--db", str(db), "--format", "html", "-o", str(out)]) == 0
    shot = tmp_path / "answer.png"
    with browser.page(timeout=60) as page:
        page.call("Emulation.setDeviceMetricsOverride", width=1280, height=900,
                  deviceScaleFactor=1, mobile=False)
        page.open(out.as_uri())
        order = page.evaluate("""Array.from(document.querySelector('#answer').children)
            .map(e => e.tagName + (e.className ? '.' + e.className : ''))""")
        plots = page.evaluate("""Array.from(document.querySelectorAll(
            '#answer figure[data-kind="forest"] svg')).map(s => {
            const r = s.getBoundingClientRect();
            return [r.width, r.height, s.querySelectorAll('g.row').length,
                    Array.from(s.querySelectorAll('g.row')).map(g => g.dataset.tone),
                    s.querySelectorAll('rect.band').length, s.textContent]; })""")
        bars = page.evaluate("""document.querySelector('figure[data-kind="bars"] svg')
            .textContent""")
        height = page.evaluate("document.querySelector('#answer').getBoundingClientRect()"
                               ".bottom")
        assert page.console_errors() == []
        page.screenshot(shot, 1280, int(height) + 20)
    assert order[:3] == ["H2", "DIV.charts forest", "PRE.answer"]
    assert len(plots) == 2  # rand4k and seq1m
    for width, tall, rows, tones, bands, text in plots:
        assert 500 < width < 1280 and tall > 150 and rows == 4 and bands == 1
        assert tones[0] == "baseline" and "slower" in text and "ratio to the baseline" in text
    assert plots[0][3] == ["baseline", "open", "open", "worse"]  # the golden answer's words
    assert "41.7× slower [2.13, 814]" in plots[0][5]
    assert "log scale" in bars
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert _leftover_browsers() == []


def test_the_answer_opens_the_html_report_in_chromium(tmp_path: Path) -> None:
    """The stored default experiment's page opens with the answer block, whole and not
    wider than a 1280-pixel window, the same lines the terminal shows (without its hint)."""
    _chromium()
    db = tmp_path / "d.db"
    db.write_bytes((DATA / "reports" / "default-experiment.db").read_bytes())
    out = tmp_path / "answer.html"
    assert main(["report", "--db", str(db), "--format", "html", "-o", str(out)]) == 0
    golden = (DATA / "reports" / "default-experiment.answer.txt").read_text()
    block = golden.split("\n\n", 1)[1].rsplit("\n", 2)[0]  # no header, no --details hint
    with browser.page(timeout=60) as page:
        page.call("Emulation.setDeviceMetricsOverride", width=1280, height=900,
                  deviceScaleFactor=1, mobile=False)
        page.open(out.as_uri())
        first = page.evaluate("document.querySelector('section').id")
        # the words follow the picture (test_the_answer_is_a_picture_first_in_chromium)
        text = page.evaluate("document.querySelector('#answer pre.answer').textContent")
        fits = page.evaluate("""(() => { const p = document.querySelector('#answer pre');
            return p.scrollWidth <= p.clientWidth; })()""")
        assert page.console_errors() == []
    assert first == "answer" and text == block and fits
    assert _leftover_browsers() == []
