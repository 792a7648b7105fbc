"""One comparison, one verdict: Holm's family over the headline rows (report.family)."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from tests.support import make_run

from volbench.report.cases import summarize_runs
from volbench.report.family import HEADLINE, SAME, SECONDARY
from volbench.report.table import headline_table
from volbench.report.verdicts import against_baseline, table_note
from volbench.stats import Verdict
from volbench.stats.multiple import holm_levels

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from familysim import family_rates


def test_holm_steps_down_until_the_first_hypothesis_it_keeps() -> None:
    # Sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop; the rest keep 0.025.
    levels = holm_levels([0.01, 0.04, 0.03, 0.005])
    assert levels == pytest.approx([0.05 / 3, 0.025, 0.025, 0.0125])
    assert holm_levels([0.001, 0.002]) == pytest.approx([0.025, 0.05])
    assert holm_levels([None, 0.001]) == pytest.approx([0.05, 0.025])
    assert holm_levels([0.2]) == [0.05]


def _runs(values: dict[str, list[float]], rw: str = "randread",
          extra: tuple[str, ...] = ("bw", "lat_mean")) -> list:
    out = []
    clock = 0.0
    for target, levels in values.items():
        for rep, iops in enumerate(levels, 1):
            metrics = {"iops": iops, "bw": iops * 4096.0, "lat_mean": 1e9 / iops}
            out.append(make_run(target, {k: metrics[k] for k in ("iops", *extra)}, rep,
                                started=clock, params={"bs": "4k", "rw": rw}))
            clock += 10.0
    return out


def test_iops_is_the_verdict_bw_is_the_same_measurement_latency_a_description() -> None:
    runs = _runs({"a": [100.0, 101.0, 99.0, 100.5], "b": [120.0, 121.0, 119.5, 120.5]})
    rows = {r.candidate.metric: r for r in against_baseline(summarize_runs(runs), "a", {})}
    assert [rows[m].role for m in ("iops", "bw", "lat_mean")] == [HEADLINE, SAME, SECONDARY]
    assert rows["iops"].phrase.startswith("faster: +")
    assert rows["bw"].phrase == "same measurement as iops, judged there"
    assert rows["lat_mean"].phrase.startswith("secondary, not a verdict: -16.")
    assert rows["iops"].family is not None and rows["lat_mean"].family is None


def test_bandwidth_of_mixed_block_sizes_is_not_the_same_measurement() -> None:
    runs = _runs({"a": [100.0, 101.0, 99.0], "b": [120.0, 121.0, 119.5]})
    mixed = [replace(r, params={**r.params, "bssplit": "4k/50:64k/50"}) for r in runs]
    rows = {r.candidate.metric: r for r in against_baseline(summarize_runs(mixed), "a", {})}
    assert rows["bw"].role == SECONDARY


def test_sequential_io_judges_bandwidth_and_a_case_without_headline_keeps_all() -> None:
    seq = _runs({"a": [100.0, 101.0, 99.0], "b": [120.0, 121.0, 119.5]}, rw="read")
    rows = {r.candidate.metric: r for r in against_baseline(summarize_runs(seq), "a", {})}
    assert (rows["bw"].role, rows["iops"].role, rows["iops"].same_as) == (HEADLINE, SAME, "bw")
    bare = _runs({"a": [100.0, 101.0, 99.0], "b": [120.0, 121.0, 119.5]}, extra=("lat_mean",))
    # lat_mean alone is not a headline, but a case with no headline keeps its metrics.
    only = [r for r in against_baseline(summarize_runs(bare), "a", {})
            if r.candidate.metric == "lat_mean"]
    assert len(only) == 1 and only[0].role == SECONDARY  # iops is its headline here


def test_the_header_names_the_family_and_intervals_agree_with_verdicts() -> None:
    many = {name: [100.0 + shift, 101.0 + shift, 99.0 + shift, 100.5 + shift]
            for name, shift in (("a", 0.0), ("b", 0.8), ("c", 3.0), ("d", -0.4))}
    rows = against_baseline(summarize_runs(_runs(many)), "a", {})
    note = table_note(rows)
    assert "headline verdicts: Holm over 3 comparisons, 5 % family-wise" in note
    assert "other metrics are descriptions (95 % each), not verdicts" in note
    for r in rows:
        c = r.comparison
        assert c is not None and c.ratio_ci is not None
        called = c.verdict in (Verdict.BETTER, Verdict.WORSE)
        assert called == (1.0 not in c.ratio_ci) or c.verdict is Verdict.EQUIVALENT
    heads = [r for r in rows if r.is_verdict]
    levels = sorted(1 - r.comparison.ratio_ci.level for r in heads if r.comparison
                    and r.comparison.ratio_ci)
    assert levels[0] == pytest.approx(0.05 / 3)  # the smallest p is tested at alpha/3


def test_a_difference_that_only_one_comparison_at_5_percent_would_call_is_not_called() -> None:
    # b vs a: p about 0.03 alone: "faster" at a plain 5 %, not at Holm's 5 %/5.
    base = [100.0, 103.0, 97.0, 101.0, 99.0]
    shifted = [v * 1.03 for v in (101.0, 104.0, 98.0, 99.5, 100.5)]
    others = {f"t{i}": [v * (1 + 0.001 * i) for v in base[::-1]] for i in range(4)}
    rows = against_baseline(summarize_runs(_runs({"a": base, "b": shifted, **others},
                                                 extra=())), "a", {})
    b = next(r for r in rows if r.target == "b")
    assert b.comparison is not None and b.comparison.p_value is not None
    assert 0.05 / 5 < b.comparison.p_value < 0.05
    assert b.comparison.verdict is not Verdict.BETTER


def _se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


@pytest.mark.slow
@pytest.mark.parametrize(("targets", "workloads", "kind", "old_at_least"),
                         [(6, 2, "lognormal", 0.2), (3, 3, "busy", 0.0),
                          (8, 1, "heavy", 0.15)])
def test_identical_targets_get_a_headline_call_in_at_most_5_percent_of_tables(
        targets: int, workloads: int, kind: str, old_at_least: float) -> None:
    # A few seconds each; bench/calibration.py --only family has the full table.
    trials = 80
    rates = family_rates(targets, workloads, trials, kind=kind, cv=0.05)
    assert rates.share(rates.new) <= 0.05 + 2 * _se(0.05, trials)
    # The per-comparison rule it replaces (the busy host's shared state makes the
    # comparisons of a round agree, so fewer tables get a call there).
    assert rates.share(rates.old) >= old_at_least


def test_headline_table_is_the_family() -> None:
    from volbench.report.data import Report

    runs = _runs({"a": [100.0, 101.0, 99.0], "b": [120.0, 121.0, 119.5]})
    report = Report([], [], runs, summarize_runs(runs))
    report.baseline = "a"
    report.verdicts = against_baseline(report.summaries, "a", {})
    table = headline_table(report)
    assert table is not None and [row[3] for row in table.rows] == ["iops"]
