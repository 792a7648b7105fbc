"""Issue 24: every command that takes --db does its job on a postgresql:// URL (real
server, tests/pgstore.py): report, compare, import, history, export, cleanup (lab run:
test_store_pg_more.py). Side by side with SQLite where both apply."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pgstore import PASSWORD
from support import make_run
from volbench.cli.main import main
from volbench.store import claims, location
from volbench.store.db import Store

pytestmark = pytest.mark.root

DATA = Path(__file__).resolve().parents[1] / "data"


def fill(where: location.Location, kernels: tuple[str, str] = ("6.1", "6.1")) -> None:
    """Two experiments of series tier1 (different names), 3 runs of 2 targets each, run
    on these kernels (their fingerprints)."""
    with Store(where) as store:
        for i, name in enumerate(("n1", "n2")):
            exp = store.begin_experiment(name, f"h{i}", {"name": name}, {"hostname": "h1"},
                                         1, series="tier1")
            store.db.execute("UPDATE experiments SET created = ? WHERE id = ?",
                             (1.7e9 + 86400 * i, exp))
            digest = store.save_fingerprint({"host.kernel": kernels[i]}, f"k{kernels[i]}")
            for t in ("a", "b"):
                store.save_target(exp, t, "directory", "built", {"path": f"/{t}"})
                for rep in range(3):
                    value = 1000.0 * (1 + i * 0.2 + (t == "b") * 0.1) + rep
                    store.save_run(exp, make_run(t, {"iops": value}, rep, started=rep + 1.0),
                                   fingerprint=digest)
            store.set_status(exp, "done")


def out_of(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> str:
    assert main(argv) == code, capsys.readouterr()
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err
    return out


def test_report_gives_from_postgresql_what_it_gives_from_sqlite(
        tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill(location.parse(pg_url))
    fill(tmp_path / "r.db")
    for fmt in ("json", "csv"):
        from_pg = out_of(capsys, ["report", "--db", pg_url, "--format", fmt,
                                  "--experiment", "all"])
        from_file = out_of(capsys, ["report", "--db", str(tmp_path / "r.db"), "--format",
                                    fmt, "--experiment", "all"])
        if fmt == "json":
            pg_doc, file_doc = json.loads(from_pg), json.loads(from_file)
            assert len(pg_doc["runs"]) == 12
            assert pg_doc["runs"] == file_doc["runs"]
        else:
            assert from_pg == from_file and from_pg.count("\n") > 12


def test_compare_takes_a_url_on_either_side(tmp_path: Path, pg_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fill(location.parse(pg_url), ("6.1", "6.12"))
    fill(tmp_path / "r.db", ("6.1", "6.12"))
    both = out_of(capsys, ["compare", pg_url, str(tmp_path / "r.db"), "--format", "json",
                           "--experiment-a", "n1", "--experiment-b", "n2"])
    swapped = out_of(capsys, ["compare", str(tmp_path / "r.db"), pg_url, "--format", "json",
                              "--experiment-a", "n1", "--experiment-b", "n2"])
    one, two = json.loads(both), json.loads(swapped)
    assert one["a"]["label"].startswith("postgresql://vbowner:***@/")
    assert two["b"]["label"] == one["a"]["label"]
    for doc in (one, two):
        doc["a"].pop("label")
        doc["b"].pop("label")
    assert one == two and "better" in both
    # The runs' fingerprints, read from either store, named in the output itself.
    assert one["fingerprint_differences"] == [{"field": "host.kernel", "a": "6.1",
                                               "b": "6.12"}]


def test_import_into_postgresql(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = [DATA / "fio/3.33/randread-4k-qd16.json",
             DATA / "fio/3.33/randread-4k-qd16-jsonplus.json"]
    out = out_of(capsys, ["import", "--tool", "fio", "--target", "old-box", "--db", pg_url,
                          *map(str, files)])
    assert "imported 2 run(s) of fio as target old-box" in out and "vbowner:***@" in out
    with Store(location.parse(pg_url)) as store:
        (exp,) = store.experiments()
        runs = store.runs([exp.id])
    raw = json.loads(files[0].read_text())["jobs"][0]["read"]["iops"]
    assert [r.target for r in runs] == ["old-box"] * 2
    assert [m.value for m in runs[0].metrics if m.name == "iops"] == [raw]


def test_history_and_export_read_postgresql(pg_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fill(location.parse(pg_url))
    text = out_of(capsys, ["history", "--db", pg_url, "--series", "tier1"])
    assert text.count("2 experiment(s)") == 2 and "better ×1.2" in text
    lines = out_of(capsys, ["export", "--db", pg_url]).splitlines()
    assert len(lines) == 12
    assert {json.loads(x)["experiment"]["name"] for x in lines} == {"n1", "n2"}
    assert [json.loads(x)["fingerprint"] for x in lines] == [{"host.kernel": "6.1"}] * 12


def dead_pid() -> int:
    """The PID of a process that has ended (a claim owner killed by now)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_cleanup_releases_a_killed_run_s_claim_in_postgresql(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    where = location.parse(pg_url)
    mine = claims.me()
    with Store(where) as store:
        ids = [store.begin_experiment(f"e{i}", f"h{i}", {}, {}, 1) for i in range(3)]
        with store.db:
            claims.insert(store.db, ids[0], claims.Owner(
                mine.host, mine.boot_id, dead_pid(), 12345, mine.since))
            claims.insert(store.db, ids[1], claims.Owner(
                "elsewhere", "b", 42, 1, mine.since))
            claims.insert(store.db, ids[2], mine)  # alive: this test process
    assert main(["cleanup", "--db", pg_url]) == 0
    out, err = capsys.readouterr()
    assert f"removed the claim on experiment {ids[0]} (e0) in postgresql://vbowner:***@" in out
    assert f"experiment {ids[1]} (e1)" in err and "--take-over" in err
    assert PASSWORD not in out + err
    with Store(where) as store:
        left = {r[0] for r in store.db.execute("SELECT experiment_id FROM claims")}
        status = {r.id: r.status for r in store.experiments()}
    assert left == {ids[1], ids[2]}
    assert status == {ids[0]: "interrupted", ids[1]: "running", ids[2]: "running"}
    assert main(["cleanup", "--db", pg_url]) == 0  # again: nothing more to release
    assert "removed the claim" not in capsys.readouterr().out
    assert socket.gethostname() == mine.host and os.getpid() == mine.pid
