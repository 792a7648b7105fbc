"""Issue 24: `volbench history` over a store: points, verdicts, fingerprints, change points."""

from __future__ import annotations

import json
import random
from pathlib import Path
from xml.etree import ElementTree

import pytest

from support import make_run
from volbench.cli import storecmds
from volbench.cli.main import main
from volbench.store import history as storehistory
from volbench.store.db import Store
from volbench.system.host import fingerprint

BASE = {"host.name": "h1", "host.kernel": "6.1", "fs.type": "xfs"}


def nightly(path: Path, n: int = 40, step_at: int = 20, odd_kernel: int = 30,
            wander: float = 0.0) -> None:
    rng = random.Random(5)
    drift = 0.0
    with Store(path) as store:
        for i in range(n):
            host = "h2" if i == 35 else "h1"
            exp = store.begin_experiment("nightly", f"h{i}", {"name": "nightly"},
                                         {"hostname": host}, 1)
            store.db.execute("UPDATE experiments SET created = ? WHERE id = ?",
                             (1.7e9 + 86400 * i, exp))
            fp = {**BASE, "host.kernel": "6.12" if i == odd_kernel else "6.1"}
            digest = store.save_fingerprint(fp, fingerprint.digest(fp))
            drift = wander * drift + 0.03 * rng.gauss(0, 1) if wander else 0.0
            level = 1000.0 * (1.1 if i >= step_at else 1.0) * (1 + drift)
            for rep in range(3):
                value = level * (1 + 0.01 * rng.gauss(0, 1))
                store.save_run(exp, make_run("t", {"iops": value}, rep, started=float(rep)),
                               fingerprint=digest)
            store.set_status(exp, "done")
        other = store.begin_experiment("other", "x", {}, {}, 1)
        store.save_run(other, make_run("t", {"iops": 1.0}, 1, started=1.0))


def test_the_history_finds_the_step_and_names_a_changed_kernel(tmp_path: Path) -> None:
    nightly(tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        (line,) = storehistory.build(store, storehistory.Filters("nightly"))
    assert line.metric == "iops" and len(line.points) == 40
    assert [c.index for c in line.change_points] == [20]
    assert line.change_points[0].change == pytest.approx(0.10, abs=0.02)
    assert line.points[20].verdict == "better" and line.points[20].ratio == \
        pytest.approx(1.1, abs=0.03)
    assert line.points[30].differs == (("host.kernel", "6.1", "6.12"),)
    assert line.points[30].verdict == "" and line.points[31].differs
    assert {p.verdict for p in line.points[1:20]} <= {"equivalent", "inconclusive"}


def test_a_wandering_history_says_it_drifts_and_a_steady_one_does_not(tmp_path: Path) -> None:
    nightly(tmp_path / "w.db", step_at=99, wander=0.95)
    nightly(tmp_path / "s.db", step_at=99)
    with Store(tmp_path / "w.db") as wandering, Store(tmp_path / "s.db") as steady:
        (w,) = storehistory.build(wandering, storehistory.Filters("nightly"))
        (s,) = storehistory.build(steady, storehistory.Filters("nightly"))
    assert w.drift > 0.5 and s.drift < 0.3
    assert "experiments drift together" in storecmds.history_text([w])
    assert "drift" not in storecmds.history_text([s])


def test_filters_and_allowed_changes(tmp_path: Path) -> None:
    nightly(tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        (kernel61,) = storehistory.build(store, storehistory.Filters(
            "nightly", fingerprint={"host.kernel": "6.1"}))
        (allowed,) = storehistory.build(store, storehistory.Filters("nightly",
                                                                    allow=("host",)))
        (h2,) = storehistory.build(store, storehistory.Filters("nightly", host="h2"))
        (since,) = storehistory.build(store, storehistory.Filters(
            "nightly", since=1.7e9 + 86400 * 25))
    assert len(kernel61.points) == 39 and not any(p.differs for p in kernel61.points)
    assert allowed.points[30].verdict and not allowed.points[30].differs
    assert [p.host for p in h2.points] == ["h2"]
    assert len(since.points) == 15 and since.change_points == ()


def test_history_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    nightly(tmp_path / "r.db")
    assert main(["history", "--db", str(tmp_path / "r.db"), "--experiment", "nightly"]) == 0
    out = capsys.readouterr().out
    assert "t / w / " in out and "iops (op/s, op=read), 40 experiment(s)" in out
    assert "not compared, differs in host.kernel 6.1 → 6.12" in out
    assert "change point: from experiment 21 " in out and "(+10." in out
    assert main(["history", "--db", str(tmp_path / "r.db"), "--experiment", "nightly",
                 "--format", "json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["change_points"][0]["index"] == 20
    assert main(["history", "--db", str(tmp_path / "r.db"), "--format", "html"]) == 0
    assert "<svg" in capsys.readouterr().out  # "other": one point, no change point
    page = tmp_path / "h.html"
    assert main(["history", "--db", str(tmp_path / "r.db"), "--format", "html",
                 "--experiment", "nightly", "-o", str(page)]) == 0
    text = page.read_text()
    assert text.count("<svg") == 1 and "change +10." in text and "40 experiments" in text
    chart = ElementTree.fromstring(text[text.index("<svg"):text.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    words = [t.text or "" for t in chart.iter(ns + "text")]
    # Each experiment's 95 % interval (3 runs each) drawn, with a tooltip naming it.
    intervals = [g for g in chart.iter(ns + "g") if g.get("class") == "interval"]
    assert len(intervals) == 40
    tips = [g.findtext(ns + "title") or "" for g in intervals]
    assert tips[20].startswith(f"experiment 21 (id 21), h1, {storecmds._when(1.7e9 + 86400 * 20)}:")
    assert "; better" in tips[20] and "differs in host.kernel" in tips[30]
    # x counts experiments, not seconds; the shading is the change point's, not a burst's.
    assert not [w for w in words if w.endswith(" s")]
    assert {"1", "5", "20", "40"} <= set(words)
    assert any(w.startswith(f"experiment (1 = {storecmds._when(1.7e9)}, 40 = ") for w in words)
    assert "after a change point" in words and "95 % interval of the mean" in words
    assert "burst / warm-up" not in text
    (segment,) = [r for r in chart.iter(ns + "rect") if r.get("class") == "segment"]
    assert "experiments 21–40, change +10." in (segment.findtext(ns + "title") or "")
    with pytest.raises(SystemExit):
        main(["history", "--db", str(tmp_path / "r.db"), "--fingerprint", "nokey"])
    assert "expected KEY=VALUE" in capsys.readouterr().err


def one(path: Path, kernel: str) -> None:
    with Store(path) as store:
        exp = store.begin_experiment("e", "h", {"name": "e"}, {}, 1)
        fp = {**BASE, "host.kernel": kernel}
        digest = store.save_fingerprint(fp, fingerprint.digest(fp))
        for rep in range(3):
            store.save_run(exp, make_run("t", {"iops": 1000.0 + rep}, rep, started=1.0),
                           fingerprint=digest)


def test_compare_names_the_environment_fields_that_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one(tmp_path / "a.db", "6.1")
    one(tmp_path / "b.db", "6.12")
    one(tmp_path / "c.db", "6.1")
    assert main(["compare", str(tmp_path / "a.db"), str(tmp_path / "b.db")]) == 0
    out, err = capsys.readouterr()
    assert out.count("host.kernel 6.1 → 6.12") == 1 and err == ""  # said once, in the output
    written = tmp_path / "c.md"
    assert main(["compare", str(tmp_path / "a.db"), str(tmp_path / "b.db"), "-o",
                 str(written)]) == 0
    err = capsys.readouterr().err  # the output went to a file: the terminal is told too
    assert "note: A and B ran in different environments: host.kernel: 6.1 → 6.12" in err
    assert "host.kernel 6.1 → 6.12" in written.read_text()
    assert main(["compare", str(tmp_path / "a.db"), str(tmp_path / "c.db")]) == 0
    out, err = capsys.readouterr()
    assert "different environments" not in err and "6.12" not in out


def two_targets(path: Path) -> None:
    """Experiments of targets a and b; only b's firmware changes (1 -> 2) at the second."""
    with Store(path) as store:
        for i in range(2):
            exp = store.begin_experiment("pair", f"h{i}", {"name": "pair"}, {"hostname": "h"}, 1)
            store.db.execute("UPDATE experiments SET created = ? WHERE id = ?",
                             (1.7e9 + 86400 * i, exp))
            for target, firmware in (("a", "1"), ("b", "1" if i == 0 else "2")):
                fp = {**BASE, "device0.model": target.upper(), "device0.firmware": firmware}
                digest = store.save_fingerprint(fp, fingerprint.digest(fp))
                for rep in range(3):
                    store.save_run(exp, make_run(target, {"iops": 1000.0 + rep}, rep,
                                                 started=float(rep)), fingerprint=digest)


def test_each_target_s_line_is_compared_on_its_own_fingerprint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Once one fingerprint per experiment (the first run's, target a's): b's firmware
    # change went unseen and b got a verdict.
    two_targets(tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        a, b = storehistory.build(store, storehistory.Filters("pair"))
        allowed = storehistory.build(store, storehistory.Filters(
            "pair", allow=("device0.firmware",)))
    assert a.case.startswith("a / ") and b.case.startswith("b / ")
    assert a.points[1].verdict == "equivalent" and a.points[1].differs == ()
    assert b.points[1].verdict == "" and b.points[1].differs == (
        ("device0.firmware", "1", "2"),)
    assert [line.points[1].verdict for line in allowed] == ["equivalent", "equivalent"]
    assert main(["history", "--db", str(tmp_path / "r.db"), "--experiment", "pair"]) == 0
    out = capsys.readouterr().out
    b_block = out[out.index("b / "):]
    assert out.count("not compared") == 1
    assert "not compared, differs in device0.firmware 1 → 2" in b_block
