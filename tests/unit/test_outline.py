"""The report outline is defined once (report/outline.py): every format follows its order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from support import load, make_db, make_run
from volbench import report
from volbench.report.options import ReportOptions
from volbench.report.outline import OUTLINE, parts, walk


class Recorder:
    """A renderer that writes down what it was asked to render, in order."""

    def __getattr__(self, key: str) -> Any:
        def render(report: Any, options: Any, workload: str | None = "-") -> list[str]:
            return [key if workload == "-" else f"{key}:{workload}"]
        return render

    def workload_open(self, report: Any, workload: str) -> list[str]:
        return [f"<{workload}>"]

    def workload_close(self, report: Any, workload: str) -> list[str]:
        return [f"</{workload}>"]


class TwoWorkloads:
    def workloads(self) -> list[str]:
        return ["w", "v"]


def test_walk_follows_the_outline_flat_or_grouped_per_workload() -> None:
    rec, rep, opts = Recorder(), TwoWorkloads(), ReportOptions()
    flat = walk(rec, rep, opts)  # type: ignore[arg-type]
    assert flat == [p.key if not p.per_workload else f"{p.key}:None" for p in OUTLINE]
    grouped = walk(rec, rep, opts, grouping=rec)  # type: ignore[arg-type]
    group = [p.key for p in OUTLINE if p.per_workload]
    assert grouped[:6] == ["answer", "verdicts", "warnings", "durability", "percent", "phases"]
    assert grouped[6:6 + 2 * (len(group) + 2)] == [
        "<w>", *(f"{k}:w" for k in group), "</w>", "<v>", *(f"{k}:v" for k in group), "</v>"]
    assert grouped[-2:] == ["runs", "environment"]
    brief = walk(rec, rep, opts, brief=True)  # type: ignore[arg-type]
    assert brief == ["answer", "verdicts", "warnings", "durability", "summary:None",
                     "curves:None"]
    assert [p.key for p in parts(brief=True)] == ["answer", "verdicts", "warnings",
                                                  "durability", "summary", "curves"]


def _db(tmp_path: Path) -> Path:
    runs = [make_run(t, {"iops": i + rep, "lat_mean": 0.01}, rep, started=100.0 * rep + n,
                     workload=w)
            for rep in (1, 2, 3) for n, (t, w, i) in enumerate(
                (("a", "w", 100.0), ("b", "w", 120.0), ("a", "v", 50.0), ("b", "v", 50.0)))]
    return make_db(tmp_path / "o.db", runs, document={"name": "o", "baseline": "a"})


def test_markdown_and_html_put_the_sections_in_the_outlines_order(tmp_path: Path) -> None:
    rep = load(_db(tmp_path))
    md = report.render(rep, "markdown")
    heads = re.findall(r"^## (\S+)", md, re.M)
    assert heads == ["Answer", "Headline:", "Verdicts:", "Warnings", "%", "Summary", "Per-run",
                     "Runs", "Environment"]
    page = report.render(rep, "html")
    sections = re.findall(r'<section id="([^"]+)">', page)
    assert sections == ["answer", "verdicts", "warnings", "percent", "workload-w", "workload-v",
                        "runs", "environment"]
    # Within each workload: summary before per-run values, as in Markdown.
    w = page[page.index('id="workload-w"'):page.index('id="workload-v"')]
    assert w.index("<h3>Summary</h3>") < w.index("Per-run values")
    # The navigation bar follows the outline too, with every section the page has.
    nav = re.search(r"<nav>(.*?)</nav>", page)
    assert nav is not None
    assert re.findall(r'href="#([^"]+)"', nav.group(1)) == sections


def test_the_terminal_shows_the_brief_sections_only(tmp_path: Path) -> None:
    text = report.render(load(_db(tmp_path)), "table", ReportOptions(details=True))
    assert "Verdicts: each target vs a" in text and "\nSummary\n" in text
    assert "% of a" not in text and "Per-run" not in text and "Environment" not in text
