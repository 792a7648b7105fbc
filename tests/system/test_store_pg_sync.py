"""Issue 24, reliability against the real server (tests/pgstore.py): push twice and pull
back; pushes killed at random moments leave nothing half-visible and resume; three
writers and two pushes at once store every run once; a connection dropped mid-run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from pgstore import PASSWORD, PgServer
from support import ROOT, make_run
from volbench.cli.main import main
from volbench.core.errors import StoreError
from volbench.core.model import Histogram, Parsed, Series
from volbench.store import location
from volbench.store.db import Store

pytestmark = pytest.mark.root

CLI = [sys.executable, "-m", "volbench.cli.main"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def fill(path: Path, experiments: int, runs: int) -> None:
    with Store(path) as store:
        for e in range(experiments):
            exp = store.begin_experiment(f"e{e}", f"h{e}", {"name": f"e{e}"}, {}, 1)
            with store.db:  # one transaction: building the file fast
                for rep in range(runs):
                    store.insert_run(exp, make_run("t", {"iops": rep, "lat": 1.0, "bw": 2.0},
                                                   rep, started=float(rep)))
            store.set_status(exp, "done")


def counts(url: str) -> dict[str, int]:
    """Runs per pushed experiment, and duplicates of any run UUID (must be none)."""
    with Store(location.parse(url)) as store:
        dups = store.db.execute("SELECT count(*) - count(DISTINCT uuid) FROM runs").fetchone()
        assert dups == (0,)
        return {name: n for name, n in store.db.execute(
            "SELECT e.name, count(r.id) FROM experiments e LEFT JOIN runs r"
            " ON r.experiment_id = e.id GROUP BY e.name")}


def test_push_twice_then_pull_gives_the_same_results(tmp_path: Path, pg_url: str,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    src = tmp_path / "a.db"
    fill(src, 2, 5)
    with Store(src) as store:  # raw outputs, series and a histogram travel too
        hist = Parsed(histograms=(Histogram("clat", "s", ((1e-5, 3), (2e-5, 4)), {}),),
                      series=(Series("iops", "op/s", ((1.0, 5.0),), {}),))
        store.save_run(1, replace(make_run("t", {"iops": 9.0}, 9, started=9.0,
                                           parsed_extra=hist, error="a\tb\\c\nd\re"),
                                  outputs={"fio.json": "{}\n"}))
    assert main(["push", str(src), "--to", pg_url]) == 0
    out = capsys.readouterr().out
    assert "2 new experiment(s), 11 new run(s)" in out and PASSWORD not in out
    assert main(["push", str(src), "--to", pg_url]) == 0
    assert "0 new experiment(s), 0 new run(s)" in capsys.readouterr().out
    assert main(["pull", pg_url, "--to", str(tmp_path / "b.db")]) == 0
    with Store(src) as a, Store(tmp_path / "b.db") as b, Store(location.parse(pg_url)) as p:
        for e in (1, 2):
            want = [(r.metrics, r.outputs, r.parsed.series, r.parsed.histograms, r.error)
                    for r in a.runs([e], outputs=True, series=True, histograms=True)]
            for other in (b, p):
                assert [(r.metrics, r.outputs, r.parsed.series, r.parsed.histograms, r.error)
                        for r in other.runs([e], outputs=True, series=True,
                                            histograms=True)] == want
                assert other.histogram_totals([e]) == a.histogram_totals([e])
    assert main(["report", "--db", pg_url, "--list"]) == 0
    listed = capsys.readouterr().out
    assert "e0" in listed and "6 runs" in listed


@pytest.mark.slow
def test_a_push_killed_at_random_moments_is_never_half_visible_and_resumes(
        tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "a.db"
    fill(src, 8, 150)
    rng = random.Random(24)
    subprocess.run([*CLI, "push", str(src), "--to", pg_url], env=ENV, check=True,
                   capture_output=True, timeout=300)
    assert counts(pg_url) == {f"e{e}": 150 for e in range(8)}
    seen: set[int] = set()
    for _ in range(10):
        # Empty the store, push, kill it somewhere between start and finish: after a
        # random number of experiments became visible, plus a random part of the next
        # one's copy. (Kills at random times after the start landed all before or all
        # after the copy on a loaded host: Python's start-up is most of a push.)
        pgstore_admin_reset(pg_url)
        push = subprocess.Popen([*CLI, "push", str(src), "--to", pg_url], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wanted = rng.randint(0, 7)
        deadline = time.monotonic() + 120
        while len(counts(pg_url)) < wanted and push.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.05))
        push.send_signal(signal.SIGKILL)
        push.wait()
        partial = counts(pg_url)
        assert set(partial.values()) <= {150}, partial  # whole experiments or nothing
        seen.add(len(partial))
        subprocess.run([*CLI, "push", str(src), "--to", pg_url], env=ENV, check=True,
                       capture_output=True, timeout=300)
        assert counts(pg_url) == {f"e{e}": 150 for e in range(8)}
    assert len(seen) >= 3, f"the kills all landed alike: {seen}"


def pgstore_admin_reset(url: str) -> None:
    with Store(location.parse(url)) as store, store.db:
        for table in ("outputs", "histograms", "series", "metrics", "metrics_json",
                      "histogram_totals", "metric_kinds", "targets", "claims", "runs",
                      "experiments"):
            store.db.execute(f"DELETE FROM {table}")


WRITER = """
import sys
from support import make_run
from volbench.store import location
from volbench.store.db import Store
with Store(location.parse(sys.argv[1])) as store:
    exp = store.begin_experiment(sys.argv[2], sys.argv[2], {}, {}, 1, claim=True)
    for rep in range(60):
        store.save_run(exp, make_run("t", {"iops": rep}, rep, started=float(rep)))
    store.release(exp)
"""


@pytest.mark.slow
def test_three_writers_and_two_pushes_at_once_store_every_run_once(tmp_path: Path,
                                                                   pg_url: str) -> None:
    src = tmp_path / "a.db"
    fill(src, 3, 100)
    env = {**ENV, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests'}"}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_url, f"w{i}"], env=env,
                              stderr=subprocess.PIPE) for i in range(3)]
    procs += [subprocess.Popen([*CLI, "push", str(src), "--to", pg_url], env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
              for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert counts(pg_url) == {"w0": 60, "w1": 60, "w2": 60, "e0": 100, "e1": 100, "e2": 100}


def test_a_connection_dropped_mid_run_loses_no_run(pg_server: PgServer, pg_url: str) -> None:
    with Store(location.parse(pg_url)) as store:
        exp = store.begin_experiment("e", "h", {}, {}, 1, claim=True)
        store.save_run(exp, make_run("t", {"iops": 1.0}, 1, started=1.0))
        (pid,) = store.db.execute("SELECT pg_backend_pid()").fetchone()
        pg_server.admin(f"SELECT pg_terminate_backend({pid})")
        store.save_run(exp, make_run("t", {"iops": 2.0}, 2, started=2.0))  # reconnects
        assert [r.repetition for r in store.runs([exp])] == [1, 2]
        assert store.db.execute("SELECT count(*) FROM claims").fetchone() == (1,)
        store.release(exp)


def test_a_server_gone_for_good_is_one_line_saying_resume(pg_server: PgServer,
                                                          pg_url: str) -> None:
    dead = pg_url.replace(f"port={pg_server.port}", "port=1")
    with Store(location.parse(pg_url)) as store:
        exp = store.begin_experiment("e", "h", {}, {}, 1)
        (pid,) = store.db.execute("SELECT pg_backend_pid()").fetchone()
        store.path = location.parse(dead)  # where a reconnect would go: nobody listens
        pg_server.admin(f"SELECT pg_terminate_backend({pid})")
        with pytest.raises(StoreError) as err:
            store.save_run(exp, make_run("t", {"iops": 2.0}, 2, started=2.0))
    text = str(err.value)
    assert "\n" not in text and PASSWORD not in text
    assert "connection to PostgreSQL" in text and "--resume" in text


def test_connections_racing_on_a_fresh_database_all_get_the_schema(pg_url: str) -> None:
    # Eight connections that all find no schema and create it at the same instant:
    # CREATE SCHEMA IF NOT EXISTS failed some of them on pg_namespace's unique index (CI's
    # five-writer test hit it once in a full run). Then eight stores opened at once on an
    # empty database: the schema and every migration, raced.
    import threading
    from collections.abc import Callable

    import psycopg

    from volbench.store import pg

    def race(work: Callable[[int], None]) -> list[BaseException]:
        gate = threading.Barrier(8)
        failures: list[BaseException] = []

        def racer(i: int) -> None:
            gate.wait()
            try:
                work(i)
            except Exception as exc:  # any failure fails the test
                failures.append(exc)

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return failures

    conns = [psycopg.connect(pg_url, autocommit=True) for _ in range(8)]
    try:
        for _ in range(20):
            conns[0].execute(f"DROP SCHEMA IF EXISTS {pg.SCHEMA} CASCADE")
            assert race(lambda i: pg.ensure_schema(conns[i])) == []
        for _ in range(3):
            conns[0].execute(f"DROP SCHEMA IF EXISTS {pg.SCHEMA} CASCADE")
            assert race(lambda i: Store(location.parse(pg_url)).close()) == []
    finally:
        for conn in conns:
            conn.close()
