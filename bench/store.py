"""The store at team scale: push, report and history on PostgreSQL beside SQLite.

SYNTHETIC DATA, FOR SCALE ONLY (bench/report_scale.py's generator: one real fio json+
output with every metric scaled per run). Needs root (the PostgreSQL server runs as the
postgres user; started by services/postgres.py on a private socket under /var/tmp and
deleted at the end) and psycopg (`pip install 'volbench[pg]'`).

    .venv/bin/python bench/store.py                      # all stages, the issue's sizes
    .venv/bin/python bench/store.py --report-runs 10000  # a smaller report stage
    .venv/bin/python bench/store.py --only rates         # the history simulation table
    .venv/bin/python bench/store.py --only report --keep --server URL
        # a running server (superuser URL); the report stage's data made once and kept
        # (the database `report` there and BASE/report.db): generating 100 000 runs
        # twice takes 5-16 min, the reports themselves 1-3 min

Stages, each timed side by side where both backends apply:
- push: a 10 000-run SQLite file pushed into an empty PostgreSQL store (goal <= 10 s),
  and pushed again (nothing to add);
- report: `volbench report --format html/json` of 100 000 runs, from SQLite and from
  PostgreSQL (goal <= 15 s from PostgreSQL);
- history: `volbench history` of 1 000 experiments x 3 runs (goal <= 2 s), both backends;
- rates: the change-point simulation of stats/history.py on six kinds of noise, offline
  (the complete history) and online (the history as it stood after each experiment).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from report_scale import SAMPLE, generate, measure, synthetic_run
from volbench.core.errors import StoreError
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.services import postgres
from volbench.stats import history as changes
from volbench.store import bulkinsert, location, sync
from volbench.store import history as storehistory
from volbench.store.db import Store
from volbench.system import journal
from volbench.targets.base import Built
from volbench.workloads import fio

BASE = Path("/var/tmp/volbench-bench-store")


@contextmanager
def server() -> Iterator[str]:
    """A throwaway PostgreSQL 15; yields the superuser URL of a fresh database."""
    home = BASE / uuid.uuid4().hex[:8]
    (home / "data").mkdir(parents=True)
    (home / "svc").mkdir()
    os.environ.setdefault("VOLBENCH_STATE_DIR", str(home / "state"))
    try:
        with (journal.opened("bench-store") as jrnl, jrnl.scope() as scope,
              postgres.cluster(postgres.ClusterConfig(), scope,
                               Built("bench", "directory", home / "data"),
                               home / "svc") as pg):
            yield f"postgresql://postgres@/postgres?host={pg.sockdir}&port={pg.port}"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def fresh(url: str, name: str) -> str:
    """A new empty database on the server of `url`; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")  # type: ignore[arg-type]
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return url.replace("/postgres?", f"/{name}?")


def remove(path: Path) -> None:
    """An SQLite file and its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def timed(fn: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()  # type: ignore[operator]
    return time.perf_counter() - start, result


def stage_push(url: str, runs: int) -> bool:
    path = BASE / "push.db"
    remove(path)
    n = generate(path, 10, max(1, runs // 100), 10, seed=2)
    target = location.parse(fresh(url, "push"))
    with Store(path, read_only=True) as src, Store(target) as dst:
        first, copied = timed(lambda: sync.copy(src, dst))
        again, _ = timed(lambda: sync.copy(src, dst))
    print(f"push {n} runs (37 metrics, a 229-bin histogram, a series each) SQLite -> "
          f"PostgreSQL: {first:.1f} s (goal <= 10 s); again, nothing new: {again:.1f} s; "
          f"added {copied.runs} run(s)")  # type: ignore[attr-defined]
    remove(path)
    return first <= 10.0


def generate_pg(where: location.Location, targets: int, cases: int, reps: int,
                seed: int) -> None:
    """report_scale.generate's runs, in its order and with its seed, into PostgreSQL in
    batches (a push would hold all 100 000 runs of the one experiment in memory)."""
    sample = fio.parse_json(SAMPLE.read_text(), str(SAMPLE))
    rng = random.Random(seed)
    with Store(where) as store:
        exp = store.begin_experiment("synthetic-scale", f"synthetic-{seed}",
                                     {"name": "synthetic-scale", "synthetic": True,
                                      "baseline": "t0"}, {"synthetic": True}, seed)
        for t in range(targets):
            store.save_target(exp, f"t{t}", "synthetic", "built", {"recipe": ["# synthetic"]})
        batch: list[bulkinsert.Item] = []
        started = 1.7e9
        for rep in range(1, reps + 1):
            for case in range(cases):
                for t in range(targets):
                    run = synthetic_run(sample, t, case, rep, started, rng)
                    batch.append((run, str(uuid.uuid4()), ""))
                    started += 11.0
                    if len(batch) == 2000:
                        with store.db:
                            bulkinsert.insert_runs(store.db, exp, batch)
                        batch = []
        with store.db:
            bulkinsert.insert_runs(store.db, exp, batch)
        store.set_status(exp, "done")


def kept(url: str, path: Path, runs: int) -> location.Location | None:
    """The report stage's PostgreSQL store when it and the SQLite file hold `runs` runs
    from an earlier --keep run, else None."""
    import psycopg

    target = location.parse(url.replace("/postgres?", "/report?"))
    if not path.exists():
        return None
    try:
        with Store(path, read_only=True) as a, Store(target) as b:
            ok = all(s.experiments() and s.count_runs(s.experiments()[-1].id) == runs
                     for s in (a, b))
    except (psycopg.Error, StoreError):
        return None
    return target if ok else None


def stage_report(url: str, runs: int, keep: bool = False) -> bool:
    path = BASE / "report.db"
    cases = max(1, runs // 1000)
    target = kept(url, path, 10 * cases * 100) if keep else None
    if target is None:
        remove(path)
        start = time.perf_counter()
        n = generate(path, 10, cases, 100, seed=1)
        print(f"generated {n} runs into SQLite in {time.perf_counter() - start:.0f} s")
        target = location.parse(fresh(url, "report"))
        took, _ = timed(lambda: generate_pg(target, 10, cases, 100, seed=1))
        print(f"generated the same runs into PostgreSQL in {took:.0f} s")
    else:
        print("reusing the report stage's data of an earlier --keep run")
    n = 10 * cases * 100
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    worst_pg = 0.0
    for fmt in ("html", "json"):
        for label, where in (("SQLite", path), ("PostgreSQL", target)):
            total = sum(t for _, t in measure(where, fmt))  # type: ignore[arg-type]
            if label == "PostgreSQL":
                worst_pg = max(worst_pg, total)
            print(f"report --format {fmt} of {n} runs from {label:<10}: {total:6.2f} s "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    if not keep:
        remove(path)
    print(f"slowest report from PostgreSQL {worst_pg:.2f} s (goal <= 15 s)")
    return worst_pg <= 15.0


def fill_history(store: Store, experiments: int) -> None:
    rng = random.Random(3)
    for i in range(experiments):
        exp = store.begin_experiment("nightly", f"h{i}", {"name": "nightly"},
                                     {"hostname": "h1"}, 1)
        level = 1000.0 * (1.05 if i >= experiments // 2 else 1.0)
        with store.db:
            for rep in range(3):
                metric = Metric("iops", level * rng.gauss(1, 0.03), "op/s", {"op": "read"})
                store.insert_run(exp, RunResult("t", "fio", {"rw": "randread"}, rep, Status.OK,
                                                float(i), float(i) + 1, parsed=Parsed((metric,))))


def stage_history(url: str, experiments: int) -> bool:
    path = BASE / "history.db"
    remove(path)
    worst = 0.0
    for label, where in (("SQLite", path), ("PostgreSQL", location.parse(fresh(url, "hist")))):
        with Store(where) as store:
            fill_history(store, experiments)
            changes._null.cache_clear()  # each backend pays for its permutation nulls
            took, lines = timed(lambda s=store: storehistory.build(
                s, storehistory.Filters("nightly")))
        worst = max(worst, took)
        found = [c.index for c in lines[0].change_points]  # type: ignore[index]
        print(f"history of {experiments} experiments x 3 runs from {label:<10}: {took:.2f} s "
              f"(change points at {found}; the step is at {experiments // 2})")
    remove(path)
    print(f"slowest history {worst:.2f} s (goal <= 2 s)")
    return worst <= 2.0


def stage_rates(trials: int) -> None:
    print(f"\nchange points, 5 % step at the middle, CV 3 %, {trials} histories, seed 1:")
    print("offline: the complete history; online: the same histories as they stood after "
          "each experiment (flagged = a change point within 3 of the step by the k-th "
          "experiment after it; flat = a look from 6 experiments on flagging anything)")
    print("| noise | experiments | found within 3 | flat flagged | online by 3 after "
          "| by 5 | by 10 | flat, any look | flat, one look (mean / worst) |\n"
          "|---|---|---|---|---|---|---|---|---|")
    noises = [("iid normal", lambda r, n: [r.gauss(0, 1) for _ in range(n)]),
              ("Student t3", changes.heavy_tails), ("stalls", changes.stalls),
              ("busy host", changes.busy_host),
              *((f"AR(1) phi {phi}", changes.ar1(phi)) for phi in (0.2, 0.3, 0.5, 0.7, 0.9))]
    for n in (60, 20, 120):
        for label, noise in noises if n == 60 else noises[:1] + noises[-3::2]:
            rates = changes.simulate_rates(noise, trials=trials, n=n, step_at=n // 2)
            online = changes.simulate_online(noise, trials=trials, n=n, step_at=n // 2)
            print(f"| {label} | {n} | {rates.detected:.1%} | {rates.false_alarm:.1%} "
                  f"| {online.within(3):.1%} | {online.within(5):.1%} "
                  f"| {online.within(10):.1%} | {online.flat_any:.1%} "
                  f"| {online.flat_per_look:.1%} / {online.flat_worst_look:.1%} |",
                  flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--push-runs", type=int, default=10_000)
    p.add_argument("--report-runs", type=int, default=100_000)
    p.add_argument("--experiments", type=int, default=1000)
    p.add_argument("--trials", type=int, default=300)
    p.add_argument("--only", choices=("push", "report", "history", "rates"), action="append")
    p.add_argument("--server", metavar="URL", help="a running PostgreSQL server's superuser "
                   "URL (postgresql://postgres@/postgres?host=SOCKDIR&port=N) instead of a "
                   "throwaway one")
    p.add_argument("--keep", action="store_true", help="report stage: reuse the data an "
                   "earlier --keep run generated, and keep it")
    args = p.parse_args(argv)
    only = set(args.only or ("push", "report", "history", "rates"))
    ok = True
    BASE.mkdir(parents=True, exist_ok=True)
    if only - {"rates"}:
        with (contextlib.nullcontext(args.server) if args.server else server()) as url:
            if "push" in only:
                ok &= stage_push(url, args.push_runs)
            if "history" in only:
                ok &= stage_history(url, args.experiments)
            if "report" in only:
                ok &= stage_report(url, args.report_runs, args.keep)
    if "rates" in only:
        stage_rates(args.trials)
    with contextlib.suppress(OSError):
        BASE.rmdir()  # gone when nothing else is in it
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
