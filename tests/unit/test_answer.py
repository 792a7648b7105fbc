"""The answer block (report/answer.py), the likely causes of noise (report/noise.py) and the
activity record they read (system/host/activity.py)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

from support import load, make_db, make_run
from volbench import report
from volbench.report import answer, noise
from volbench.report.cases import CaseSummary
from volbench.report.verdicts import VerdictRow
from volbench.stats import compare, summarize
from volbench.stats.geometric import Figure, geometric_figure
from volbench.system.host import activity


def _row(candidate: list[float], baseline: list[float], higher: bool = True) -> VerdictRow:
    def case(target: str, values: list[float]) -> CaseSummary:
        return CaseSummary(target, "w", {}, "iops" if higher else "lat_mean",
                           "op/s" if higher else "s", {"op": "read"}, summarize(values),
                           tuple(values), tuple(range(1, len(values) + 1)))

    c = compare(candidate, baseline, higher_is_better=higher, threshold=0.02)
    return VerdictRow(case("b", candidate), case("a", baseline), 0.02, c)


def test_words_for_faster_slower_equal_and_undecided() -> None:
    base = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    twice = [v * 1.98 for v in base]
    assert answer.verdict_words(_row(twice, base)).startswith("1.98× faster [")
    assert answer.verdict_words(_row(base, twice)).startswith("1.98× slower [")
    same = [1001.0, 1009.0, 991.0, 1004.0, 996.0]
    assert answer.verdict_words(_row(same, base)) == "no difference beyond ±2 %"
    wild = [500.0, 1500.0, 900.0]
    text = answer.verdict_words(_row(wild, base[:3]))
    assert text.startswith("not decided: between -") and " and +" in text


def test_a_lower_latency_is_faster() -> None:
    base = [2e-3, 2.02e-3, 1.98e-3, 2.01e-3]
    half = [v / 2 for v in base]
    assert answer.verdict_words(_row(half, base, higher=False)).startswith("2× faster")


def test_geometric_figure_stays_positive_and_covers() -> None:
    # Lognormal runs at CV ~40 %, 3 runs per case: the arithmetic t-interval goes below 0
    # here, the geometric one cannot; its coverage of the true geometric mean is ~95 %.
    rng = random.Random(22)
    sigma, trials, covered = 0.4, 4000, 0
    for _ in range(trials):
        values = [1000.0 * math.exp(rng.gauss(0.0, sigma)) for _ in range(3)]
        fig = geometric_figure(values)
        assert fig is not None and fig.interval is not None
        assert 0 < fig.interval.low <= fig.centre <= fig.interval.high
        covered += fig.interval.low <= 1000.0 <= fig.interval.high
    assert 0.935 <= covered / trials <= 0.965
    assert geometric_figure([5.0]) == Figure(5.0, None)
    assert geometric_figure([0.0, 10.0]) == Figure(5.0, None)


def _busy(other: float, load: float, steal: float = 0.0) -> dict[str, object]:
    return {"activity": {"seconds": 5.0, "cpus": 2, "other_cpus": other,
                         "steal_cpus": steal, "load1_start": load, "load1_end": load,
                         "vm_dirty": {"dirty_ratio": 20}}}


def test_likely_cause_names_the_busy_runs() -> None:
    runs = [make_run("a", {"iops": 100.0}, rep, started=rep * 10.0,
                     annotations=_busy(1.3 if rep in (2, 5) else 0.1,
                                       3.1 if rep in (2, 5) else 0.4))
            for rep in range(1, 6)]
    text = noise.likely_cause(runs, range(5))
    assert text is not None
    assert "during runs 2 and 5" in text and "load average 3.1" in text
    quiet = [make_run("a", {"iops": 100.0}, 1, started=0.0, annotations=_busy(0.1, 0.2))]
    assert "quiet" in (noise.likely_cause(quiet, [0]) or "")
    assert noise.likely_cause([make_run("a", {"iops": 1.0}, 1, started=0.0)], [0]) is None


def test_likely_cause_names_steal_and_changed_settings() -> None:
    a = make_run("a", {"iops": 1.0}, 1, started=0.0, annotations=_busy(0.0, 0.1, steal=0.6))
    b_notes = _busy(0.0, 0.1)
    b_notes["activity"]["vm_dirty"] = {"dirty_ratio": 5}  # type: ignore[index]
    b = make_run("a", {"iops": 1.0}, 2, started=9.0, annotations=b_notes)
    text = noise.likely_cause([a, b], [0, 1]) or ""
    assert "steal" in text and "during run 1" in text
    assert "vm.dirty_* settings changed" in text


def test_activity_reads_proc_stat_lines() -> None:
    line = "cpu  17655 0 7453 52794 3934 0 389 72 0 0\ncpu0 1 2 3 4\n"
    busy, steal, total = activity.parse_cpu_line(line) or (0, 0, 0)
    assert (busy, steal, total) == (17655 + 7453 + 389, 72, 17655 + 7453 + 52794 + 3934
                                    + 389 + 72)
    assert activity.parse_cpu_line("intr 1 2\n") is None
    assert activity.parse_load1("2.31 1.43 0.60 1/159 14213\n") == 2.31
    before = activity.Snapshot(0.0, 0, 0, 0, 0.5)
    hz = __import__("os").sysconf("SC_CLK_TCK")
    after = activity.Snapshot(2.0, 3 * hz, 0, 4 * hz, 1.5)
    rec = activity.record(before, after, own_cpu_seconds=1.0)
    assert rec["other_cpus"] == 1.0  # 3 CPU seconds busy, 1 the workload's, over 2 s
    assert rec["load1_start"] == 0.5 and rec["load1_end"] == 1.5


def test_activity_snapshot_on_this_machine() -> None:
    now = activity.snapshot()
    assert now.total_ticks > 0 and now.busy_ticks > 0
    assert "vm_dirty" in activity.settings()


def _db(tmp_path: Path) -> Path:
    runs = []
    for rep in range(1, 4):
        for target, iops in (("xfs", 1000.0), ("ext4", 1980.0), ("btrfs", 1001.0)):
            jitter = 1.0 + 0.004 * (rep - 2)
            runs.append(make_run(target, {"iops": iops * jitter, "bw": iops * 4096 * jitter},
                                 rep, started=rep * 100.0))
    return make_db(tmp_path / "r.db", runs, document={"name": "demo", "baseline": "xfs"})


def test_terminal_shows_the_answer_and_details_on_request(tmp_path: Path) -> None:
    rep = load(_db(tmp_path))
    short = report.render(rep, "table")
    assert "Answer: each target vs xfs" in short
    assert "  ext4   1980 op/s [" in short and "1.98× faster" in short
    assert "no difference beyond ±2 %" in short
    assert "Summary" not in short and "Verdicts" not in short
    full = report.render(rep, "table", report.ReportOptions(details=True))
    assert full.startswith(short.split("\n", 1)[0]) and "Summary" in full
    assert "Answer: each target vs xfs" in full


def test_series_exports_carry_each_runs_seconds(tmp_path: Path) -> None:
    import csv
    import io
    import json

    from volbench.core.model import Parsed, Series
    from volbench.store.db import Store

    tps = Series("tps", "tx/s", ((1.0, 2992.7), (2.0, 3297.0)), {})
    runs = [make_run("a", {"iops": 1.0}, 1, started=0.0, parsed_extra=Parsed((), (tps,))),
            make_run("a", {"iops": 1.0}, 2, started=9.0)]
    db = make_db(tmp_path / "s.db", runs)
    from volbench.cli.main import _report_for

    with Store(db, read_only=True) as store:
        series = report.ReportOptions(series=True)
        rep = _report_for(store, [1], series)
        doc = json.loads(report.render(rep, "json", series))
        rows = list(csv.reader(io.StringIO(report.render(rep, "csv", series))))
        plain = json.loads(report.render(rep, "json"))
    (one,) = doc["series"]
    assert one["run"] == 1 and one["repetition"] == 1 and one["name"] == "tps"
    assert one["points"] == [[1.0, 2992.7], [2.0, 3297.0]]
    assert rows[0][-3:] == ["tags", "second", "value"] and len(rows) == 3
    assert rows[2][-2:] == ["2.0", "3297.0"] and rows[2][1] == "1"
    assert "series" not in plain


def test_a_workload_without_a_headline_is_named(tmp_path: Path) -> None:
    # IOPS of a sequential case is not its headline (throughput is), and it has none here.
    runs = [make_run(t, {"iops": v + rep}, rep, started=rep * 10.0 + i, workload="bonnie",
                     params={"size": "64M", "rw": "read"})
            for rep in (1, 2, 3) for i, (t, v) in enumerate((("a", 100.0), ("b", 200.0)))]
    text = report.render(load(make_db(tmp_path / "b.db", runs)), "table")
    assert "bonnie: no headline metric; its 1 comparison(s) are in volbench report --details" \
        in text


def test_many_cases_still_fit_the_screen(tmp_path: Path) -> None:
    # 4 targets x 3 workloads x 5 cases each: fewer cases per workload until it fits.
    runs = [make_run(t, {"iops": base * (1 + 0.01 * rep) * k}, rep,
                     started=rep * 1000.0 + k * 10 + i, workload=w,
                     params={"rw": "randread", "bs": f"{2 ** k}k"})
            for rep in (1, 2, 3) for w in ("w1", "w2", "w3") for k in range(1, 6)
            for i, (t, base) in enumerate((("a", 100.0), ("b", 150.0), ("c", 90.0),
                                           ("d", 101.0)))]
    text = report.render(load(make_db(tmp_path / "m.db", runs)), "table")
    lines = text.splitlines()
    assert len(lines) <= answer.MAX_LINES and max(map(len, lines)) <= answer.MAX_COLUMNS
    # How many cases fit depends on how many note lines the answer has below them.
    assert any(re.fullmatch(r"\([34] more w1 cases: volbench report --details\)", line)
               for line in lines)
    assert "w3 bs=2k — read IOPS" in lines


def test_one_target_shows_its_figures_without_a_baseline(tmp_path: Path) -> None:
    runs = [make_run("only", {"iops": 100.0 + rep}, rep, started=rep * 10.0)
            for rep in (1, 2, 3)]
    text = report.render(load(make_db(tmp_path / "o.db", runs)), "table")
    assert "Answer: each target (geometric mean" in text
    assert "  only  102 op/s [99.54, 104.5]\n" in text and "baseline\n" not in text


def test_a_quiet_guest_is_not_called_a_quiet_machine() -> None:
    quiet = [make_run("a", {"iops": 1.0}, 1, started=0.0, annotations=_busy(0.1, 0.2))]
    assert "guest was quiet" in (noise.likely_cause(quiet, [0], in_vm=True) or "")


def _commit_run(target: str, rep: int, sync_ms: float, params: dict[str, object]
                ) -> report.RunResult:
    """A fio run with an fdatasync after every write: the sync and the write figures."""
    from volbench.core.model import Metric, Parsed, RunResult, Status
    jitter = 1 + 0.01 * rep
    rate = 1000.0 / (sync_ms * jitter + 0.3)
    metrics = (Metric("iops", rate, "op/s", {"op": "write"}),
               Metric("lat_mean", 0.3e-3, "s", {"op": "write"}),
               Metric("clat_p99", 0.5e-3, "s", {"op": "write"}),
               Metric("iops", rate, "op/s", {"op": "sync"}),
               Metric("total_ios", rate * 10, "", {"op": "sync"}),
               Metric("lat_mean", sync_ms * jitter * 1e-3, "s", {"op": "sync"}),
               Metric("commit_lat_mean", (sync_ms * jitter + 0.3) * 1e-3, "s", {"op": "sync"}),
               Metric("commit_lat_p99", 4 * sync_ms * jitter * 1e-3, "s", {"op": "sync"}),
               Metric("lat_p99", 4 * sync_ms * jitter * 1e-3, "s", {"op": "sync"}))
    return RunResult(target, "commit", params, rep, Status.OK, rep * 10.0, rep * 10.0 + 5,
                     parsed=Parsed(metrics))


def test_a_commit_bound_case_answers_with_sync_latency_and_rate(tmp_path: Path) -> None:
    """The mean and p99 commit latency (writes + sync), then syncs/s with the write IOPS
    beside it (not judged); the mode named in the title when every case has it."""
    params: dict[str, object] = {"rw": "randwrite", "bs": "4k", "sync": "fdatasync:1"}
    runs = [_commit_run(t, rep, ms, params) for t, ms in (("one", 0.5), ("lvm25", 2.0))
            for rep in (1, 2, 3)]
    lines = answer.answer_lines(load(make_db(tmp_path / "c.db", runs)))
    titles = [line for line in lines if line.startswith("commit")]
    assert titles == ["commit — mean commit latency (writes + sync), fdatasync after every "
                      "write", "commit — p99 commit latency, at least (per run), fdatasync after "
                      "every write", "commit — syncs/s, fdatasync after every write"]
    rate = lines[lines.index(titles[2]) + 1:]
    assert rate[0].startswith("  one") and "baseline" in rate[0] and "(writes " in rate[0]
    assert rate[1].startswith("  lvm25") and "slower" in rate[1] and "(writes " in rate[1]
    p99 = lines[lines.index(titles[1]) + 2]
    assert p99.startswith("  lvm25") and "4× slower" in p99 and "(sync p99 8" in p99
    mean = lines[lines.index(titles[0]) + 2]  # the sync call beside the commit's mean
    assert mean.startswith("  lvm25") and mean.endswith("(sync 2.04 ms)"), mean
    assert not any("write IOPS" in line for line in lines)
    from volbench.report.options import ReportOptions
    details = report.render(load(tmp_path / "c.db"), "table", ReportOptions(details=True))
    assert "jobs; for a commit: sync latency and syncs/s)" in details


def test_a_mode_beside_none_is_a_varying_parameter(tmp_path: Path) -> None:
    runs = [_commit_run("one", rep, 0.5, {"rw": "randwrite", "sync": "fdatasync:1"})
            for rep in (1, 2, 3)]
    from volbench.core.model import Metric, Parsed, RunResult, Status
    runs += [RunResult("one", "commit", {"rw": "randwrite"}, rep, Status.OK, 100.0 + rep,
                       105.0 + rep, parsed=Parsed((Metric("iops", 5000.0, "op/s",
                                                          {"op": "write"}),)))
             for rep in (1, 2, 3)]
    built = load(make_db(tmp_path / "m.db", runs))
    assert built.varying_params("commit") == ["sync"]
    titles = [line for line in answer.answer_lines(built) if line.startswith("commit")]
    assert "commit — write IOPS" in titles
    assert "commit sync=fdatasync:1 — p99 commit latency, at least (per run)" in titles


def test_a_commit_case_counts_once_in_the_cases_a_workload_shows(tmp_path: Path) -> None:
    """Its three figures are one case: four syncing cases show three, "1 more"."""
    runs = [_commit_run("one", rep, ms, {"rw": "randwrite", "bs": bs, "sync": "fdatasync:1"})
            for bs, ms in (("4k", 0.5), ("8k", 0.6), ("16k", 0.7), ("32k", 0.8))
            for rep in (1, 2, 3)]
    lines = answer.answer_lines(load(make_db(tmp_path / "k.db", runs)))
    assert sum(1 for line in lines if line.startswith("commit bs=")) == 9
    assert "(1 more commit case: volbench report --details)" in lines
