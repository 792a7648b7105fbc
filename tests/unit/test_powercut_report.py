"""Power cuts in the report: the verdict in words with its bound, and a faster target that
loses acknowledged writes is never plainly "faster"."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from support import load, make_db, make_run
from volbench import report
from volbench.core.model import Metric, Parsed, RunResult
from volbench.report import durability
from volbench.report.options import ReportOptions

CUT = {"fault": "power-cut"}


def _cut_run(target: str, rep: int, iops: float, lost: int, *, recovered: bool = True,
             commits: bool = False) -> RunResult:
    names = ("commits_lost", "commits_acked") if commits else ("acked_lost", "acked_writes")
    cut = (Metric("recovered", float(recovered), "", CUT),
           Metric(names[0], float(lost), "", CUT),
           Metric(names[1], 200.0, "", CUT),
           Metric("recovery_seconds", 3.0 + rep, "s", CUT))
    run = make_run(target, {"iops": iops}, rep, started=100.0 * rep + len(target),
                   workload="writes", params={"bs": "4k", "rw": "randwrite"},
                   tags={"op": "write"}, annotations={"power_cut": {"cut_s": 12.5}})
    return replace(run, parsed=Parsed((*run.parsed.metrics, *cut)))


def test_lossless_cuts_give_the_upper_bound() -> None:
    rows = durability.rows([_cut_run("sync", r, 100, 0) for r in range(1, 21)])
    assert len(rows) == 1 and rows[0].verdict.lost_nothing
    assert durability.words(rows[0]) == (
        "lost nothing in 20 cuts (at most 13.9 % of cuts lose data, 95 % upper bound)")
    assert durability.short(rows[0]) == "lost nothing in 20 power cuts (≤ 13.9 %)"


def test_losing_cuts_give_counts_and_the_interval() -> None:
    lost = [0] * 13 + [5, 40, 40, 60, 80, 100, 120]
    rows = durability.rows([_cut_run("async", r + 1, 180, n) for r, n in enumerate(lost)])
    assert durability.words(rows[0]) == (
        "lost acknowledged writes in 7 of 20 cuts (median 60, up to 120) "
        "(15-59 % of cuts lose data, 95 %)")
    assert durability.short(rows[0]) == "lost acknowledged writes in 7 of 20 power cuts"


def test_a_stack_that_does_not_come_back_is_a_loss() -> None:
    runs = [_cut_run("pg", r, 50, 0, recovered=r > 2, commits=True) for r in range(1, 11)]
    row = durability.rows(runs)[0]
    assert row.counts == "commits" and row.verdict.failed_recoveries == 2
    assert durability.short(row) == "no recovery after 2 of 10"


def test_the_answer_never_calls_a_forgetful_target_plainly_faster(tmp_path: Path) -> None:
    runs = [_cut_run("sync", r, 100.0 + r, 0) for r in range(1, 21)]
    runs += [_cut_run("async", r, 180.0 + r, 30 if r % 3 == 0 else 0) for r in range(1, 21)]
    db = make_db(tmp_path / "d.db", runs, document={"name": "d", "baseline": "sync"})
    text = report.render(load(db), "table")
    flat = " ".join(text.split())  # an answer line wraps at 100 columns
    assert re.search(r"async [\d.]+ op/s \[[^]]+\] 1\.\d+× faster \[[^]]+\] — lost "
                     r"acknowledged writes in 6 of 20 power cuts", flat), text
    assert "baseline — lost nothing in 20 power cuts (≤ 13.9 %)" in flat
    details = report.render(load(db), "table", ReportOptions(details=True))
    assert "Power cuts: what was acknowledged and then lost" in details
    assert "lost acknowledged writes in 6 of 20 cuts (median 30, up to 30)" in details
    page = report.render(load(db), "html")
    assert 'id="durability"' in page


def test_a_power_cut_window_of_a_huge_number_is_a_problem_not_a_crash() -> None:
    from volbench.config.faults import parse_faults
    from volbench.config.fields import Reader
    problems: list = []  # type: ignore[type-arg]
    parse_faults(Reader({"faults": [{"action": "power-cut",
                                     "at": {"between": ["8s", 10**400]}}]}, "w", problems))
    assert problems and "at" in str(problems[0])
