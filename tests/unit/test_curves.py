"""Load curves without a disk: the `load:`/`sla:` fields, the plan, fio's rate options,
run-time resolution of steps, and the pure curve functions (knee, SLA rate, probes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from support import DATA
from volbench.core.errors import ExperimentError, VolbenchError
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.engine import curves
from volbench.engine.experiment import parse_document
from volbench.engine.plan import make_plan
from volbench.stats import curve
from volbench.workloads import fio
from volbench.workloads.base import RunContext

TARGET = {"name": "a", "type": "loopdisk"}


def doc(**workload: Any) -> dict[str, Any]:
    job = {"name": "c", "tool": "fio", "rw": "randread", "iodepth": 16, "runtime": 3,
           "load": {"steps": ["10%", "50%", "100%"]}, **workload}
    return {"name": "x", "targets": [TARGET, {**TARGET, "name": "b"}], "workloads": [job]}


def problems(**workload: Any) -> list[str]:
    with pytest.raises(ExperimentError) as err:
        parse_document(doc(**workload))
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def test_load_steps_become_cases_saturation_first_then_steps_then_probes() -> None:
    exp = parse_document(doc(sla={"p99": "5ms", "probes": 2}))
    spec = exp.workloads[0]
    assert spec.matrix["load"] == ("max", "10%", "50%", "100%", "sla-1", "sla-2")
    assert isinstance(spec, fio.FioSpec) and spec.load is not None and spec.load.sla is not None
    assert spec.load.sla.limit == pytest.approx(0.005) and spec.load.sla.stat == "p99"
    absolute = parse_document(doc(load={"steps": [100, 250]})).workloads[0]
    assert absolute.matrix["load"] == ("max", 100, 250)
    assert "load" not in parse_document({**doc(), "workloads": [
        {"name": "p", "tool": "fio"}]}).workloads[0].matrix


def test_bad_load_and_sla_fields_name_the_field() -> None:
    fix = "is not a step: give a percentage of the saturation rate (25%) or an absolute rate (200)"
    assert problems(load={"steps": ["x%", 25, "25%", "25%", -3]}) == [
        f"workloads[0].load.steps[0]: 'x%' {fix}",
        "workloads[0].load.steps[3]: 25% is given twice",
        "workloads[0].load.steps[4]: -3 is not a step: give a percentage (25%) or a rate (200)",
    ]
    assert problems(sla={"p98": "5ms"}) == [
        "workloads[0].sla: p98 is not a latency objective: give one of p50, p90, p95, p99, "
        "p99.9, mean"]
    assert problems(sla={"p99": "soon"}) == [
        "workloads[0].sla.p99: 'soon' is not a latency: write e.g. 5ms, 500us or 0.005"]
    job = {k: v for k, v in doc()["workloads"][0].items() if k != "load"}
    with pytest.raises(ExperimentError, match="an objective needs a load curve"):
        parse_document({**doc(), "workloads": [{**job, "sla": {"p99": "5ms"}}]})
    assert problems(load={"stepz": [1]}) == ["workloads[0].load.steps: is required",
                                             "workloads[0].load.stepz: unknown field"]


def test_every_order_runs_a_rounds_saturation_before_its_steps_and_probes() -> None:
    for order in ("interleaved", "shuffled", "sequential"):
        exp = parse_document({**doc(sla={"mean": "1ms"}), "order": order, "repeat": 3})
        runs = make_plan(exp, seed=3).runs()
        for target in ("a", "b"):
            for rep in (1, 2, 3):
                steps = [str(r.params["load"]) for r in runs
                         if r.target == target and r.repetition == rep]
                assert steps[0] == "max" and steps[-3:] == ["sla-1", "sla-2", "sla-3"], steps


def test_fio_holds_a_step_at_its_rate_spread_over_jobs_and_split_by_the_mix() -> None:
    spec = parse_document(doc(rw="randrw", rwmixread=70, numjobs=2)).workloads[0]
    case = next(c for c in fio.cases(spec) if c["load"] == "50%")  # type: ignore[arg-type]
    assert fio.rate_options(case, 400.0, 1) == [("rate_iops", "140,60"),
                                                 ("rate_process", "poisson")]
    assert fio.rate_options({**case, "load": "max"}, None, 1) == []
    plan = fio.rate_options(case, None, 1)
    assert plan[0] == ("rate_iops", "<50% of the saturation rate measured in this round>")
    single = {"rw": "randread", "numjobs": 1, "load": 100}
    assert fio.rate_options(single, 100.0, 2) == [("rate_iops", "50"),
                                                  ("rate_process", "poisson")]


def test_the_command_carries_the_resolved_rate(tmp_path: Path) -> None:
    from volbench.targets.base import Built

    spec = parse_document(doc()).workloads[0]
    case = next(c for c in fio.cases(spec) if c["load"] == "10%")  # type: ignore[arg-type]
    built = Built("a", "directory", tmp_path)
    argv = fio.command(spec, case, RunContext(built, tmp_path, {}, offered=123.4)).argv
    assert "--rate_iops=123" in argv and "--rate_process=poisson" in argv
    assert not any(a.startswith("--load") for a in argv)


def capture() -> RunResult:
    """A real rate-limited run: randrw 70/30, two jobs at 140,60 IOPS each (fio 3.33)."""
    parsed = fio.parse_json((DATA / "fio/3.33/rate-poisson-randrw70-nj2.json").read_text())
    return RunResult("a", "c", {"load": "50%"}, 1, Status.OK, 0.0, 1.0, parsed=parsed)


def test_a_runs_rate_and_latency_come_from_every_operation() -> None:
    run = capture()
    iops = {m.tags["op"]: m.value for m in run.metrics if m.name == "iops"}
    assert curve.run_rate(run) == pytest.approx(iops["read"] + iops["write"])
    p99 = {m.tags["op"]: m.value for m in run.metrics if m.name == "clat_p99"}
    assert curve.run_latency(run, "p99") == max(p99.values())  # the objective holds for each
    means = {m.tags["op"]: m.value for m in run.metrics if m.name == "lat_mean"}
    weighted = (means["read"] * iops["read"] + means["write"] * iops["write"]) / (
        iops["read"] + iops["write"])
    assert curve.run_latency(run, "mean") == pytest.approx(weighted)
    assert curve.run_latency(run, "p77") is None


def P(offered: float | None, rate: float, latency: float | None) -> curve.Point:
    return curve.Point(offered, rate, latency)


def test_knee_is_where_p99_doubles_its_light_load_value_between_the_steps() -> None:
    flat_then_up = [P(100, 99, 1e-3), P(500, 498, 1.2e-3), P(900, 890, 1.9e-3),
                    P(1000, 990, 2.5e-3), P(1100, 1000, 40e-3)]
    # 2 ms lies between 1.9 ms (890) and 2.5 ms (990): on the line through the inverse
    # latencies (526.3 and 400 per s), 500 per s is 20.8 % of the way: 910.8.
    assert curve.knee(flat_then_up) == pytest.approx(890 + 100 * (1 / 1.9e-3 - 500)
                                                     / (1 / 1.9e-3 - 400))
    assert curve.knee(flat_then_up[:3]) is None  # never doubles: no knee
    assert curve.knee(flat_then_up[:1]) is None
    # Order is by offered rate, whatever the order of the list.
    assert curve.knee(list(reversed(flat_then_up))) == curve.knee(flat_then_up)


def test_sla_rate_is_interpolated_past_the_highest_rate_meeting_it_never_above_saturation(
        ) -> None:
    pts = [P(100, 99, 1e-3), P(500, 498, 3e-3), P(900, 890, 6e-3), P(None, 1000, 50e-3)]
    # 5 ms between 3 ms (498) and 6 ms (890): inverse latencies 333.3, 166.7, 200 per s.
    assert curve.sla_rate(pts, 5e-3) == pytest.approx(498 + 0.8 * 392)
    assert curve.sla_rate(pts, 10e-3) == pytest.approx(
        890 + 110 * (1 / 6e-3 - 100) / (1 / 6e-3 - 20))
    assert curve.sla_rate(pts, 1.0) == 1000  # met everywhere: the saturation rate
    assert curve.sla_rate(pts, 0.5e-3) is None  # not met even at the lightest load
    # A step held above saturation delivers at most saturation.
    over = [P(1100, 1010, 1e-3), P(None, 1000, 1e-3)]
    assert curve.sla_rate(over, 5e-3) == 1000
    # A noisy light step that fails ends the search: every lighter load must meet it.
    assert curve.sla_rate([P(100, 99, 9e-3), P(500, 498, 1e-3)], 5e-3) is None


def test_probes_bisect_the_bracket_the_steps_left() -> None:
    pts = [P(100, 99, 1e-3), P(500, 498, 3e-3), P(900, 890, 6e-3)]
    assert curve.probe_rate(pts, 5e-3, 1000) == 700
    assert curve.probe_rate([*pts, P(700, 690, 4e-3)], 5e-3, 1000) == 800
    assert curve.probe_rate(pts, 1.0, 1000) == 1000  # nothing failed
    assert curve.probe_rate(pts, 0.5e-3, 1000) == 50  # nothing met


def run(step: object, rep: int, rate: float, *, warmup: bool = False,
        p99: float = 1e-3, status: Status = Status.OK) -> RunResult:
    metrics = (Metric("iops", rate, "op/s", {"op": "read"}),
               Metric("clat_p99", p99, "s", {"op": "read"}),
               Metric("lat_mean", p99 / 3, "s", {"op": "read"}))
    return RunResult("a", "c", {"rw": "randread", "load": step}, rep, status, rep, rep + 1,
                     warmup, parsed=Parsed(metrics))


def test_steps_resolve_from_their_rounds_saturation_and_are_recorded() -> None:
    sla = {"stat": "p99", "limit": 2e-3, "probes": 1}
    r = curves.Resolver(lambda workload: sla)
    with pytest.raises(VolbenchError, match="no saturation run of this case finished"):
        r.resolve("a", "c", {"rw": "randread", "load": "50%"}, 1, False)
    sat = r.resolve("a", "c", {"rw": "randread", "load": "max"}, 1, False)
    assert sat is not None and sat.offered is None
    r.record(run("max", 1, 1000.0), sat, sla)
    half = r.resolve("a", "c", {"rw": "randread", "load": "50%"}, 1, False)
    assert half is not None and half.offered == 500.0 and half.saturation_round == 1
    done = r.record(run("50%", 1, 499.0, p99=1e-3), half, sla)
    assert done.annotations["load"]["offered"] == 500.0
    assert done.annotations["load"]["latency"]["p99"] == 1e-3
    assert [m.value for m in done.metrics if m.name == "offered"] == [500.0]
    full = r.resolve("a", "c", {"rw": "randread", "load": "100%"}, 1, False)
    assert full is not None
    r.record(run("100%", 1, 990.0, p99=9e-3), full, sla)
    probe = r.resolve("a", "c", {"rw": "randread", "load": "sla-1"}, 1, False)
    assert probe is not None and probe.offered == 750.0  # between 500 (met) and 1000
    # Round 2 without its own saturation run (failed): round 1's, and it says so.
    late = r.resolve("a", "c", {"rw": "randread", "load": "50%"}, 2, False)
    assert late is not None and late.saturation_round == 1
    # Warm-up rounds have their own saturation.
    with pytest.raises(VolbenchError):
        r.resolve("a", "c", {"rw": "randread", "load": "50%"}, 1, True)
    assert r.resolve("a", "c", {"rw": "randread"}, 1, False) is None


def test_a_resumed_experiment_resolves_from_the_stored_runs() -> None:
    first = curves.Resolver(lambda workload: None)
    sat = first.resolve("a", "c", {"rw": "randread", "load": "max"}, 1, False)
    assert sat is not None
    stored = first.record(run("max", 1, 800.0), sat, None)
    again = curves.Resolver(lambda workload: None, [stored])
    step = again.resolve("a", "c", {"rw": "randread", "load": "25%"}, 1, False)
    assert step is not None and step.offered == 200.0


def model_curve(target: str, cap: float, rounds: int = 3) -> list[RunResult]:
    """Runs of a disk capped at `cap` IOPS as the runner records them: latency flat
    (1 ms p99) up to 90 % of the cap, 8 ms at the cap, 100 ms unthrottled."""
    sla = {"stat": "p99", "limit": 5e-3, "probes": 1}
    r = curves.Resolver(lambda workload: sla)
    out = []
    for rep in range(1, rounds + 1):
        jitter = 1 + (rep - 2) * 0.002
        for step in ("max", "10%", "50%", "90%", "100%", "sla-1"):
            resolved = r.resolve(target, "c", {"rw": "randread", "load": step}, rep, False)
            assert resolved is not None
            offered = resolved.offered
            rate = cap * jitter if offered is None else min(offered, cap) * 0.99
            p99 = 0.1 if offered is None else 8e-3 if offered >= cap * 0.99 else 1e-3
            base = run(step, rep, rate, p99=p99)
            out.append(r.record(RunResult(target, "c", base.params, rep, Status.OK,
                                          rep * 100 + len(out), rep * 100 + len(out) + 1,
                                          parsed=base.parsed), resolved, sla))
    return out


def test_report_curves_json_verdicts_and_chart(tmp_path: Path) -> None:
    import json

    from support import load, make_db
    from volbench import report

    db = make_db(tmp_path / "c.db", [*model_curve("d500", 500), *model_curve("d1000", 1000)],
                 document={"name": "demo", "baseline": "d500"})
    rep = load(db)
    data = json.loads(report.render(rep, "json"))
    by_target = {c["target"]: c for c in data["curves"]}
    big = by_target["d1000"]
    assert set(big) >= {"target", "workload", "points", "saturation_iops", "knee_iops", "sla",
                        "sla_iops"}
    assert big["saturation_iops"] == pytest.approx(1000)
    assert [p["step"] for p in big["points"]] == ["10%", "50%", "90%", "sla-1", "100%", "max"]
    assert big["points"][0]["offered"] == pytest.approx(100) and big["points"][0]["runs"] == 3
    assert {"iops", "lat_mean", "clat_p99", "iops_ci"} <= set(big["points"][0])
    # Steps of 10 % … 90 % meet 5 ms (1 ms), 100 % does not (8 ms): the probe halfway
    # between 90 % and 100 % (950) meets it, and the answer is where the line through
    # the inverse latencies of the probe (940.5, 1 ms) and the 100 % step (990, 8 ms)
    # crosses 5 ms. The knee is read on the steps only: between the 90 % step and the
    # 100 % step, where p99 crosses 2 ms.
    def expected(cap: float, share: float, level: float) -> float:
        """Mean over model_curve's rounds of the crossing between the point at `share`
        of the round's saturation (1 ms) and the 100 % step (8 ms)."""
        found = []
        for rep in (1, 2, 3):
            jitter = 1 + (rep - 2) * 0.002
            low, high = share * cap * jitter * 0.99, min(cap * jitter, cap) * 0.99
            found.append(low + (high - low) * (1e3 - 1 / level) / (1e3 - 125))
        return sum(found) / 3

    assert big["sla_iops"] == pytest.approx(expected(1000, 0.95, 5e-3))
    assert big["knee_iops"] == pytest.approx(expected(1000, 0.90, 2e-3))
    assert big["sla_iops"] <= big["saturation_iops"]
    assert [p["step"] for p in big["search"][:6]] == ["max", "10%", "50%", "90%", "100%", "sla-1"]
    assert by_target["d500"]["sla_iops"] == pytest.approx(expected(500, 0.95, 5e-3))
    verdicts = {(v["target"], v["metric"]): v["verdict"] for v in data["verdicts"]}
    assert verdicts[("d1000", "sla_iops")] == "better"
    assert verdicts[("d1000", "saturation_iops")] == "better"
    html = report.render(rep, "html")
    assert html.count('data-kind="curve"') == 1 and "SLA p99 5 ms" in html
    assert "Load curve — d1000" in report.render(rep, "markdown")


def test_pgbench_load_steps_run_through_rate() -> None:
    from volbench.workloads import pgbench

    exp = parse_document({"name": "p", "targets": [TARGET], "workloads": [
        {"name": "t", "tool": "pgbench", "mode": ["init", "run"],
         "load": {"steps": ["50%"]}, "sla": {"mean": "10ms"}}]})
    spec = exp.workloads[0]
    cases = pgbench.cases(spec)  # type: ignore[arg-type]
    assert [c.get("load") for c in cases] == [None, "max", "50%", "sla-1", "sla-2", "sla-3"]
    assert pgbench.rate_args({"load": "50%"}, 41.26) == ["--rate", "41.260"]
    assert pgbench.rate_args({"load": "max"}, None) == []
    with pytest.raises(ExperimentError, match=re.escape(
            "p95 is not a latency objective: give one of p50, p90, p99, p99.9, mean")):
        parse_document({"name": "p", "targets": [TARGET], "workloads": [
            {"name": "t", "tool": "pgbench", "load": {"steps": [10]}, "sla": {"p95": "1s"}}]})
