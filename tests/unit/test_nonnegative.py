"""No interval of a quantity that cannot be negative goes below zero, anywhere; a run that
completed nothing is said to be stalled; an interval too wide to read is said to be
(issue 32, finding 5).

Before: a case of 994, 1009 and 0 tps gave a table interval of [-769, 2104] tps, a verdict
that "rules out changes beyond -176.7 % and +110.1 %", an "arithmetic means" note of
"-30.0 % [-160.1, +100.1]", and the stalled run read as an outlier.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import load, make_db, make_run
from volbench.report import answer
from volbench.report.charts import all_charts
from volbench.report.csvout import CsvExporter
from volbench.report.jsonout import JsonExporter
from volbench.report.markdown import MarkdownExporter
from volbench.report.options import ReportOptions
from volbench.report.terminal import TerminalExporter
from volbench.stats import compare, mean_interval
from volbench.stats.meanratio import mean_ratio

STALLED = [994.0, 1009.0, 0.0]
BASE = [1000.0, 1001.0, 999.0]


def test_a_mean_interval_of_runs_without_a_negative_value_stays_at_or_above_zero() -> None:
    ci = mean_interval(STALLED)
    assert ci is not None and ci.low == 0.0 and ci.high > 2000  # was [-769, 2104]
    signed = mean_interval([-3.0, 1.0, 2.0])  # a derived time can be negative: left be
    assert signed is not None and signed.low < 0


def test_a_ratio_of_non_negative_means_is_never_below_zero() -> None:
    c = compare(STALLED, BASE, higher_is_better=True)
    assert c.ratio_ci is not None and c.ratio_ci.low == 0.0  # was -0.769 (-176.9 %)
    assert c.equivalence_ci is not None and c.equivalence_ci.low >= 0.0
    # Fieller's set holds negative ratios when the candidate's mean is not clear of 0.
    wild = mean_ratio([50.0, 100.0, 700.0], [100.0, 102.0, 98.0])
    assert wild is not None and wild.interval is not None and wild.interval.low == 0.0


def _runs(values: list[float], target: str, start: float) -> list:
    return [make_run(target, {"tps": v}, i + 1, started=start + 10 * i, workload="pg",
                     params={"clients": 4}, tags={}) for i, v in enumerate(values)]


def test_a_stalled_run_is_named_and_no_output_shows_a_negative_interval(
    tmp_path: Path,
) -> None:
    rep = load(make_db(tmp_path / "z.db", _runs(BASE, "base", 0) + _runs(STALLED, "cand", 100)))
    stalled = [w for w in rep.warnings if w.kind == "stalled-run"]
    assert len(stalled) == 1 and "1 of 3 runs completed nothing (rep 3: 0 tps)" in \
        stalled[0].message
    assert not [w for w in rep.warnings if w.kind == "outlier"]  # said once, as a stall
    (verdict,) = rep.verdicts
    assert "rules out only changes beyond +110" in verdict.phrase
    assert "-1" not in verdict.phrase and "[-" not in verdict.phrase
    lines = "\n".join(answer.render(rep))
    assert "667.7 tx/s (1 of 3 runs stalled)" in lines and "completed nothing" in lines
    options = ReportOptions(details=True)
    for text in (TerminalExporter().render(rep, options),
                 MarkdownExporter().render(rep, options)):
        assert "-768" not in text and "-76.8" not in text and "-176" not in text
        assert "[0 tx/s, 2104 tx/s]" in text
    data = json.loads(JsonExporter().render(rep, options))
    lows = [s["mean_ci"]["low"] for s in data["summaries"] if s["mean_ci"]]
    assert min(lows) >= 0.0
    assert min(v["comparison"]["ratio_ci"]["low"] for v in data["verdicts"]) >= 0.0
    csv = CsvExporter().render(rep, options)
    assert "-768" not in csv
    made = all_charts(rep, options)
    for chart in made:
        assert "-768" not in chart.svg
    # the forest plot's log axis has no 0: the ratio interval reaching 0 ends in an arrow
    assert 'class="to-zero"' in next(c for c in made if c.kind == "forest").svg


def test_an_interval_too_wide_to_read_is_said_to_be(tmp_path: Path) -> None:
    # Three runs, one far off: the Cox interval is valid but reaches 100x the largest run.
    wild = [100.0, 104.0, 9000.0]
    rep = load(make_db(tmp_path / "w.db", _runs(BASE, "base", 0) + _runs(wild, "cand", 100)))
    (warning,) = [w for w in rep.warnings if w.kind == "too-wide"]
    assert "reaches ten times beyond its 3 runs (100 tx/s to 9000 tx/s)" in warning.message
    text = TerminalExporter().render(rep, ReportOptions(details=True))
    assert "too wide" in text
