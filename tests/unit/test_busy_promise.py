"""Issue 32: an undecided verdict promises no number of runs where other work shared the
machine during a run (stats.Comparison.promises_runs, read from report/noise.py's records)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support import load, make_db, make_run

from volbench.report import answer
from volbench.report.cases import summarize_runs
from volbench.report.compare import compare_reports
from volbench.report.verdicts import VerdictRow, against_baseline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from busysim import promise_trials

# Six runs a side, +1 % and CV ~1 %: undecided, "about 20 more runs needed (26 per side)".
CANDIDATE = [1007.0, 999.0, 1012.0, 1025.0, 1009.0, 1016.0]
BASELINE = [1006.0, 990.0, 1009.0, 1007.0, 999.0, 991.0]


def _activity(busy: bool) -> dict[str, Any]:
    return {"activity": {"seconds": 60.0, "cpus": 2, "other_cpus": 1.3 if busy else 0.1,
                         "steal_cpus": 0.0, "load1_start": 3.1 if busy else 0.3,
                         "load1_end": 3.0 if busy else 0.4}}


def _runs(values: dict[str, list[float]], busy: set[tuple[str, int]]) -> list[Any]:
    return [make_run(target, {"iops": v}, rep, started=rep * 100.0 + i,
                     annotations=_activity((target, rep) in busy))
            for i, (target, levels) in enumerate(values.items())
            for rep, v in enumerate(levels, 1)]


def _rows(values: dict[str, list[float]], busy: set[tuple[str, int]]) -> list[VerdictRow]:
    return against_baseline(summarize_runs(_runs(values, busy)), "a", {})


def test_quiet_runs_keep_their_number_of_runs() -> None:
    (row,) = _rows({"a": BASELINE, "b": CANDIDATE}, set())
    assert row.phrase == "inconclusive — about 20 more runs needed (26 per side)"
    assert answer.verdict_words(row).endswith("; ~20 more runs each would decide")
    assert row.comparison is not None and row.comparison.shared_runs == (0, 12)


def test_runs_with_company_get_no_number_and_the_reason() -> None:
    (row,) = _rows({"a": BASELINE, "b": CANDIDATE}, {("a", 2), ("b", 5)})
    assert row.phrase.startswith(
        "inconclusive — no number of runs can be promised: other work shared the machine "
        "during 2 of 12 runs, and a slow run it causes may not have shown yet; rules out "
        "changes beyond ")
    assert "run-to-run CV " in row.phrase
    assert row.phrase.endswith("decide with more runs (they show how often the other work "
                               "slows them), longer runs, less other load on the machine, "
                               "or a wider threshold (±3 % would read these runs as no "
                               "difference)")
    words = answer.verdict_words(row)
    assert words.startswith("not decided: between ") and "more run" not in words
    c = row.comparison
    assert c is not None and c.shared_runs == (2, 12) and not c.promises_runs
    (every,) = _rows({"a": BASELINE, "b": CANDIDATE},
                     {(t, rep) for t in "ab" for rep in range(1, 7)})
    assert "during all 12 runs, and" in every.phrase


def test_company_survives_the_family_s_holm_levels() -> None:
    # Two headline comparisons: judge_family re-runs compare_pair at Holm's levels.
    rows = _rows({"a": BASELINE, "b": CANDIDATE, "c": [v + 1.0 for v in CANDIDATE]},
                 {("a", 3)})
    assert len(rows) == 2 and all(r.family is not None and r.family.size == 2 for r in rows)
    for row in rows:
        assert row.comparison is not None and row.comparison.shared_runs == (1, 12)
        assert "no number of runs can be promised: other work" in row.phrase


def test_volbench_compare_reads_the_records_of_both_sets(tmp_path: Path) -> None:
    before = make_db(tmp_path / "a.db", _runs({"x": BASELINE}, set()))
    quiet = make_db(tmp_path / "b.db", _runs({"x": CANDIDATE}, set()))
    crowded = make_db(tmp_path / "c.db", _runs({"x": CANDIDATE}, {("x", 6)}))
    (row,) = compare_reports(load(before), load(quiet)).verdicts
    assert row.phrase.startswith("inconclusive — about 20 more runs needed")
    (row,) = compare_reports(load(before), load(crowded)).verdicts
    assert row.phrase.startswith("inconclusive — no number of runs can be promised: other "
                                 "work shared the machine during 1 of 12 runs")


def test_runs_without_records_keep_the_number() -> None:
    runs = [make_run(t, {"iops": v}, rep, started=rep * 100.0 + i)
            for i, (t, levels) in enumerate({"a": BASELINE, "b": CANDIDATE}.items())
            for rep, v in enumerate(levels, 1)]
    (row,) = against_baseline(summarize_runs(runs), "a", {})
    assert row.comparison is not None and row.comparison.shared_runs is None
    assert row.phrase.startswith("inconclusive — about 20 more runs needed")


@pytest.mark.parametrize(("cv", "start"), [(0.02, 3), (0.02, 5), (0.05, 5)])
def test_a_busy_host_that_shows_in_every_run_gets_no_number_it_would_break(
        cv: float, start: int) -> None:
    # bench/claims.py --promise-hard's busy host (20 % of runs slowed to 40-90 %): before,
    # identical targets kept a printed number 0-17 % of the time. A busy host's load
    # average shows in every run's record: now no number is printed at all.
    found = promise_trials(seed=37_000 + int(cv * 100) * 10 + start, trials=150, cv=cv,
                           ratio=1.0, start=start, model="every")
    assert found.old_printed >= 3 and found.old_kept <= 0.5 * found.old_printed
    assert found.new_printed == 0


def test_company_only_in_the_slowed_runs_still_prints_from_quiet_looking_runs() -> None:
    # The harder model: runs the other work did not slow look quiet. A number is printed
    # only where no first run had company, and those are the quiet-looking starts that
    # broke the promise before: the rule does not repair this case (docs/statistics.md).
    found = promise_trials(seed=37_025, trials=150, cv=0.02, ratio=1.0, start=5,
                           model="slowed")
    assert 0 < found.new_printed <= found.old_printed
    assert found.new_kept <= 0.5 * found.new_printed
