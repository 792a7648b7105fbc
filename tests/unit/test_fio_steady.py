"""`steady: {within: run}`: fio's own steady-state detection within one run (fiosteady)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import DATA, load, make_db, make_run
from volbench.cli.main import main
from volbench.config.steady import SteadySpec
from volbench.core.errors import ExperimentError
from volbench.core.model import RunResult
from volbench.engine.experiment import parse_document
from volbench.workloads import fiosteady
from volbench.workloads.fio import parse_json

FIO = DATA / "fio" / "3.33"
IN_RUN = SteadySpec("iops", 5, 0.2, 0.1, "run", 2.0)


def _metrics(name: str) -> dict[str, float]:
    parsed = parse_json((FIO / f"{name}.json").read_text())
    return {m.name: m.value for m in parsed.metrics if m.name.startswith("ss_")}


def test_fio_gets_the_slope_criterion_translated_per_second() -> None:
    # SNIA: the best-fit line moves at most 10 % of the mean across 5 samples, i.e. 4 steps
    # of a second: fio's per-second slope limit is 2.5 % of the mean.
    assert fiosteady.options(IN_RUN) == [("steadystate", "iops_slope:2.5%"),
                                         ("ss_dur", "5s"), ("ss_ramp", "2s")]
    bw = SteadySpec("bw", 30, 0.2, 0.1, "run")
    assert fiosteady.options(bw) == [("steadystate", "bw_slope:0.344828%"), ("ss_dur", "30s")]
    assert fiosteady.options(SteadySpec()) == [] and fiosteady.options(None) == []


def test_a_run_that_reached_steady_state_records_when() -> None:
    got = _metrics("steadystate-attained")  # held at 500 IOPS, stopped at 7.9 s of 30
    # A throttled disk's constant seconds: no noise range, and a drift from the 2 % that
    # matters on (stats.steady.DRIFT_MIN) could be told.
    assert got == {"ss_attained": 1.0, "ss_range": 0.0, "ss_slope": 0.0, "ss_drift": 0.0,
                   "ss_noise_range": 0.0, "ss_smallest_drift": 2.0,
                   "ss_seconds": pytest.approx(7.882)}


def test_a_run_that_never_did_records_its_last_window() -> None:
    got = _metrics("steadystate-not-attained")
    window = [16099, 17511, 20709, 18341, 21549]  # the capture's last 5 s, in order
    mean = sum(window) / 5
    assert got["ss_attained"] == 0.0 and "ss_seconds" not in got
    assert got["ss_range"] == pytest.approx((21549 - 16099) / mean * 100)
    assert 0 < got["ss_slope"] < 100
    # without steadystate options fio's JSON has no such section: nothing added
    assert _metrics("randread-4k-qd16") == {}


def test_the_steady_section_within_a_run() -> None:
    doc = {"name": "x", "targets": [{"name": "t", "type": "directory", "path": "/tmp"}],
           "workloads": [{"name": "w", "tool": "fio", "rw": "randread", "size": "1M",
                          "runtime": "1s"}],
           "steady": {"metric": "iops", "window": 300, "within": "run", "ramp": "10s"}}
    assert parse_document(doc).steady == SteadySpec("iops", 300, 0.2, 0.1, "run", 10.0)
    for steady, repeat, expected in (
        ({"metric": "tps", "within": "run"}, 1,
         "steady.metric: within: run, fio holds iops or bw steady, not tps"),
        ({"ramp": "5s"}, 1, "steady.ramp: only applies within a run"),
        ({"within": "runs"}, 1, "steady.within: 'runs' is not one of: rounds, run"),
        ({"within": "run"}, {"min": 2, "max": 5, "until": "steady"},
         "repeat: until: steady counts rounds"),
    ):
        with pytest.raises(ExperimentError) as caught:
            parse_document({**doc, "steady": steady, "repeat": repeat})
        assert str(caught.value.problems[0]).startswith(expected), caught.value.problems


def test_the_report_says_in_how_many_runs_fio_found_it_steady(tmp_path: Path) -> None:
    def run(target: str, rep: int, attained: float, rng: float, seconds: float) -> RunResult:
        values = {"iops": 500.0, "ss_attained": attained, "ss_range": rng, "ss_slope": 1.0,
                  **({"ss_seconds": seconds} if attained else {})}
        return make_run(target, values, rep, started=rep * 10.0)

    runs = [run("flat", 1, 1, 0.5, 8.0), run("flat", 2, 1, 0.4, 9.0), run("flat", 3, 1, 0.2, 12.0),
            # fio's slope criterion held once, but that window's range was 30 %: not steady
            run("rough", 1, 0, 40, 0), run("rough", 2, 1, 30, 7.0)]
    doc = {"name": "ss", "steady": {"metric": "iops", "window": 5, "within": "run"}}
    rep = load(make_db(tmp_path / "s.db", runs, document=doc))
    (line,) = [t.text for t in rep.time_lines if t.target == "flat"]
    assert line == ("flat w: steady within the run in 3 of 3 run(s) (fio iops_slope under "
                    "2.5 %/s over 5 s, range within 20 %); fio stopped them after 9.0 s "
                    "(median)")
    (warning,) = [w for w in rep.warnings if w.kind == "not-steady"]
    assert warning.target == "rough"
    assert warning.message.startswith(
        "rough w: never steady within a run in 2 run(s) (fio iops_slope under 2.5 %/s over "
        "5 s, range within 20 %; last run's final window: range 30.0 %, slope 1.0 % of the "
        "mean; in 1 more fio's slope criterion held but the range or the level (a drift "
        "beyond the noise) did not)")


def test_volbench_report_reads_the_steady_figures(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Through the CLI, which reads only the metrics a report needs of each run: before
    # issue 32 it left the ss_* figures out and said nothing of steady state. A range of
    # 30 % within a noise range of 45 % (a short, noisy window) is no evidence of change.
    runs = [make_run("d", {"iops": 500.0, "ss_attained": 1.0, "ss_range": 30.0,
                           "ss_slope": 1.0, "ss_drift": 0.0, "ss_noise_range": 45.0,
                           "ss_smallest_drift": 40.0, "ss_seconds": 8.0}, rep,
                     started=rep * 10.0) for rep in (1, 2, 3)]
    doc = {"name": "ss", "steady": {"metric": "iops", "within": "run"}}
    db = make_db(tmp_path / "c.db", runs, document=doc)
    assert main(["report", "--db", str(db), "--details"]) == 0
    out = capsys.readouterr().out
    assert ("time: d w: steady within the run in 3 of 3 run(s) (fio iops_slope under 2.5 %/s "
            "over 5 s, range within 20 %); fio stopped them after 8.0 s (median); over 5 s at "
            "this noise only a drift of 40 % or more could be told from the noise (the runs' "
            "median): a longer window tells smaller ones") in out
