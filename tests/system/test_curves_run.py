"""Load curves for real: fio on RAM disks (zram) throttled to 500 and 1000 IOPS (cgroup
blkio), whose saturation rate is known exactly. zram rather than loop disks: their image
files sit on this machine's shared disk, whose latency under the other users' load
(0.7 to 6 ms at 25 % of the cap, seen) would hide the flat part of the curve; a RAM disk
answers in tens of microseconds until the throttle queues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import load, tool
from volbench import report
from volbench.core.model import Status
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment

CAPS = (500, 1000)


@pytest.mark.root
@pytest.mark.slow
def test_throttled_disks_saturate_at_their_caps_and_the_faster_meets_the_sla_higher(
        workdir: Path, tmp_path: Path) -> None:
    tool("fio")
    doc = {
        "name": "curve", "workdir": str(workdir), "baseline": "d500",
        "targets": [{"name": f"d{cap}", "type": "zram", "size": "160M", "fs": "none",
                     "limits": {"read_iops": cap}} for cap in CAPS],
        "workloads": [{"name": "c", "tool": "fio", "rw": "randread", "bs": "4k",
                       "iodepth": 16, "size": "128M", "runtime": "2s",
                       "load": {"steps": ["25%", "50%", "110%"]},
                       "sla": {"mean": "5ms", "probes": 1}}],
        "repeat": 3,
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "c.db")
    assert outcome.counts == {"ok": 2 * 3 * 5}, outcome
    rep = load(tmp_path / "c.db")
    data = json.loads(report.render(rep, "json"))
    curves = {c["target"]: c for c in data["curves"]}
    for cap in CAPS:
        c = curves[f"d{cap}"]
        assert abs(c["saturation_iops"] / cap - 1) < 0.05, c["saturation_iops"]
        lat = {p["step"]: p["lat_mean"] for p in c["points"]}
        # Flat well below the cap, rising at it: at full depth a throttled disk answers
        # in iodepth / cap seconds (16 ms at 1000 IOPS), far above its light-load latency.
        assert lat["25%"] < 0.1 * lat["max"] and lat["50%"] < 0.1 * lat["max"], lat
        assert lat["110%"] > 5 * lat["25%"], lat
        assert lat["max"] == pytest.approx(16 / cap, rel=0.2)
        # Met at 25 and 50 %, missed at 110 %: the probe at 80 % or at saturation decides.
        assert c["sla_iops"] is not None and c["sla_iops"] <= c["saturation_iops"]
        assert c["sla_iops"] >= 0.45 * cap
        offered = {p["step"]: p["offered"] for p in c["points"]}
        assert offered["25%"] == pytest.approx(0.25 * c["saturation_iops"], rel=0.05)
    verdicts = {(v["target"], v["metric"]): v["verdict"] for v in data["verdicts"]}
    assert verdicts[("d1000", "sla_iops")] == "better"
    assert verdicts[("d1000", "saturation_iops")] == "better"


@pytest.mark.root
@pytest.mark.slow
def test_pgbench_steps_run_at_their_rate_through_pgbench_rate(workdir: Path, tmp_path: Path
                                                               ) -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)
    doc = {
        "name": "pgcurve", "workdir": str(workdir),
        "targets": [{"name": "z", "type": "zram", "size": "512M", "fs": "ext4",
                     "limits": {"read_iops": 300, "write_iops": 300}}],
        "workloads": [{"name": "tpcb", "tool": "pgbench", "scale": 1, "clients": 4,
                       "duration": "3s", "load": {"steps": ["50%"]},
                       "sla": {"mean": "1s", "probes": 0}}],
        "repeat": 1,
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "p.db")
    assert outcome.counts == {"ok": 2}, outcome
    rep = load(tmp_path / "p.db")
    step = next(r for r in rep.runs if r.params["load"] == "50%")
    rate = step.argv[step.argv.index("--rate") + 1]
    (curve,) = json.loads(report.render(rep, "json"))["curves"]
    assert float(rate) == pytest.approx(curve["saturation_tps"] / 2, rel=1e-3)
    half = next(p for p in curve["points"] if p["step"] == "50%")
    assert half["tps"] == pytest.approx(float(rate), rel=0.2)
    assert curve["sla_tps"] is not None and curve["sla_tps"] <= curve["saturation_tps"]
    assert half["clat_p99"] is not None  # from the merged transaction-log histogram


@pytest.mark.root
@pytest.mark.slow
def test_a_loop_disk_capped_at_1000_iops_saturates_at_its_cap(workdir: Path, tmp_path: Path
                                                               ) -> None:
    """The same on a file-backed loop disk: its latency follows the host's disk (so the
    curve's shape is asserted on RAM disks above), its saturation is the cap's."""
    tool("fio")
    doc = {
        "name": "loop", "workdir": str(workdir),
        "targets": [{"name": "d", "type": "loopdisk", "size": "160M", "fs": "none",
                     "limits": {"read_iops": 1000}}],
        "workloads": [{"name": "c", "tool": "fio", "rw": "randread", "iodepth": 16,
                       "size": "128M", "runtime": "2s", "load": {"steps": ["50%"]}}],
        "repeat": 1,
    }
    assert run_experiment(parse_document(doc), db=tmp_path / "l.db").counts == {"ok": 2}
    (curve,) = json.loads(report.render(load(tmp_path / "l.db"), "json"))["curves"]
    assert abs(curve["saturation_iops"] / 1000 - 1) < 0.05
    (half,) = [p for p in curve["points"] if p["step"] == "50%"]
    assert half["offered"] == pytest.approx(curve["saturation_iops"] / 2)
    assert half["iops"] == pytest.approx(half["offered"], rel=0.2)


def test_an_interrupted_step_resumes_at_the_rate_of_its_stored_saturation_run(
        tmp_path: Path) -> None:
    import sqlite3

    from support import tool
    from volbench.engine.runner import run_experiment
    from volbench.store.db import Store

    tool("fio")
    space = tmp_path / "space"
    space.mkdir()
    exp = parse_document({"name": "r", "workdir": str(tmp_path / "w"), "targets": [
        {"name": "d", "type": "directory", "path": str(space)}], "workloads": [
        {"name": "c", "tool": "fio", "rw": "randread", "size": "4M", "runtime": "1s",
         "direct": False, "load": {"steps": ["20%"]}}], "repeat": 1})
    first = run_experiment(exp, db=tmp_path / "r.db")
    with sqlite3.connect(tmp_path / "r.db") as con:  # as if killed during the step
        con.execute("UPDATE runs SET status = 'interrupted' WHERE params LIKE '%20\\%%' "
                    "ESCAPE '\\'")
    again = run_experiment(exp, db=tmp_path / "r.db", resume=True)
    assert again.experiment_id == first.experiment_id and again.skipped == 1
    with Store(tmp_path / "r.db") as store:
        runs = [r for r in store.runs([first.experiment_id]) if r.status is Status.OK]
    sat = next(r for r in runs if r.params["load"] == "max").annotations["load"]["rate"]
    step = next(r for r in runs if r.params["load"] == "20%")
    assert step.annotations["load"]["offered"] == pytest.approx(0.2 * sat)
    assert f"--rate_iops={max(1, round(0.2 * sat))}" in step.argv
