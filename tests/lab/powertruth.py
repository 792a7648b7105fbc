"""The power-cut ground truth's driver, run in the lab guest (test_powercut_lab.py).

Builds every target of the experiment with volbench's own target code on wrapped lab
disks, a PostgreSQL cluster on each target named in `pg` (pgbench -i, the commit
ledger's table), then `cuts` cycles of faults.powercycle.Cutter over all stacks at once:
arm, probes and pgbench writing, a seeded random wait in `window`, cut, recover, count.
Writes OUT/powercut.json after every cycle. A PostgreSQL cluster that does not come
back is made again (initdb) for the next cycle, and its failure counted.
"""

from __future__ import annotations

import json
import random
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from volbench.core.errors import CommandFailed
from volbench.engine import experiment
from volbench.faults import powercut
from volbench.faults.powercycle import Cutter
from volbench.faults.powerstack import Stack, stack_for
from volbench.services import postgres
from volbench.services.crashhooks import CrashHooks
from volbench.system import journal, proc
from volbench.system.block.mounts import make_dir
from volbench.system.recipe import Recipe
from volbench.targets import BuildContext, Built, open_target
from volbench.workloads import pgbench_ledger as ledger

PG_BASE = {"shared_buffers": "16MB", "max_wal_size": "64MB"}
CLIENTS = 2
# How long the writers may take to commit their first transaction before the wait.
FIRST_COMMIT_TIMEOUT_S = 90.0


class Cluster:
    """One PostgreSQL cluster of the truth: made (and made again) on its target."""

    def __init__(self, name: str, settings: dict[str, str], built: Built,
                 jrnl: journal.Journal, work: Path) -> None:
        self.name, self.built, self.jrnl, self.work = name, built, jrnl, work
        self.config = postgres.make_config({**PG_BASE, **settings})
        self.stack = ExitStack()
        self.server: postgres.Server | None = None
        self.made = 0

    def make(self) -> postgres.Server:
        self.stack.close()
        self.stack = ExitStack()
        scope = self.stack.enter_context(self.jrnl.scope())
        self.made += 1
        folder = make_dir(scope, self.work / f"pg-{self.name}-{self.made}")
        self.server = self.stack.enter_context(
            postgres.cluster(self.config, scope, self.built, folder))
        bindir = self.server.bindir
        proc.run([str(bindir / "pgbench"), *self.connect(), "-i", "-s", "1", "-q",
                  "postgres"], timeout=600)
        self.psql(ledger.CREATE)
        return self.server

    def connect(self) -> list[str]:
        assert self.server is not None
        return ["-h", str(self.server.sockdir), "-p", str(self.server.port), "-U", "postgres"]

    def psql(self, sql: str) -> str:
        assert self.server is not None
        return proc.run([str(self.server.bindir / "psql"), "-X", "-At", *self.connect(),
                         "-d", "postgres", "-c", sql], timeout=120).stdout

    def hooks(self) -> CrashHooks:
        assert self.server is not None and self.server.crash_hooks is not None
        return self.server.crash_hooks

    def pgbench(self, cycle: int, script: Path, ledger_dir: Path) -> proc.Background:
        assert self.server is not None
        argv = [str(self.server.bindir / "pgbench"), *self.connect(), "-n", "-c", str(CLIENTS),
                "-j", "1", "-T", "600", "-f", str(script), *ledger.defines(cycle), "-l",
                f"--log-prefix={ledger_dir / f'pgb-{self.name}-{cycle}'}", "postgres"]
        return proc.start(argv, log=ledger_dir / f"pgbench-{self.name}-{cycle}.out",
                          cwd=ledger_dir)

    def first_commit(self, cycle: int, timeout: float = FIRST_COMMIT_TIMEOUT_S) -> float | None:
        """Seconds until this cycle's first commit is in the table (None: none in
        `timeout`). A cut before it proves nothing of the cluster: in the lab a server just
        recovered needed more than the 2-6 s window to load its catalogs for pgbench's new
        connections (0 commits in each of the first 4 cuts of the first full run)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            try:
                if int(self.psql(f"SELECT count(*) FROM {ledger.TABLE} WHERE cycle = {cycle}")
                       .strip() or 0) > 0:
                    return time.monotonic() - started
            except CommandFailed:
                pass
            time.sleep(0.5)
        return None

    def intact(self) -> bool:
        """The ledger's table survived (fsync=off may lose it with the catalog)."""
        try:
            return self.psql(f"SELECT to_regclass('{ledger.TABLE}') IS NOT NULL").strip() == "t"
        except CommandFailed:
            return False

    def commits(self, cycle: int, ledger_dir: Path):  # type: ignore[no-untyped-def]
        def check(cut_at: float) -> ledger.Commits:
            logs = [p.read_text() for p in sorted(ledger_dir.glob(f"pgb-{self.name}-{cycle}.*"))]
            try:
                found = ledger.rows(self.psql(ledger.query(cycle)))
            except CommandFailed as exc:
                # fsync=off in the lab: the cluster came back without the ledger's table
                # (made after initdb, never made durable): every row of it is absent.
                if f'relation "{ledger.TABLE}" does not exist' not in str(exc):
                    raise
                found = ledger.rows("")
            counted = ledger.compare(ledger.acked(logs, cut_at), found)
            return ledger.Commits(counted.acked, counted.lost, counted.present,
                                  counted.durable_unacked,
                                  ledger.lost_since(logs, found, cut_at))
        return check


def _build(exp: experiment.Experiment, jrnl: journal.Journal, stack: ExitStack,
           redirect: dict[str, str], work: Path) -> dict[str, Built]:
    from volbench.engine.plan import build_order
    built: dict[str, Built] = {}
    for name in build_order(exp):
        spec = exp.target(name)
        scope = stack.enter_context(jrnl.scope())
        ctx = BuildContext(scope, Recipe(tracker=scope), make_dir(scope, work / name),
                           {d: built[d] for d in spec.on}, redirect=redirect)
        built[name] = stack.enter_context(open_target(spec, ctx))
    return built


def _write(out: Path, record: dict[str, Any]) -> None:
    tmp = out / "powercut.json.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(out / "powercut.json")


def run_truth(path: Path, out: Path, cuts: int, rng: random.Random,
              window: tuple[float, float], pg: dict[str, dict[str, str]],
              check_every: int = 1) -> None:
    """`cuts` cycles over every stack; the read-only filesystem checks on every
    `check_every`-th cut (and the last)."""
    exp = experiment.load(path)
    assert exp.lab is not None
    names = sorted({d for t in exp.targets for d in _lab_disks(t)})
    disks = powercut.cut_disks(powercut.with_log_disk(exp.lab, names), names)
    ledger_dir = out / "ledgers"
    ledger_dir.mkdir(exist_ok=True)
    script = out / "ledger.sql"
    script.write_text(ledger.script("tpcb-like"))
    record: dict[str, Any] = {"cycles": [], "setup_s": None}
    started = time.monotonic()
    work = Path("/srv/powercut")
    with journal.opened("powercut truth") as jrnl, jrnl.scope() as base, ExitStack() as stack:
        redirect = powercut.wrap(base, disks)
        built = _build(exp, jrnl, stack, redirect, work)
        clusters = {n: Cluster(n, s, built[n], jrnl, work) for n, s in pg.items()}
        for cluster in clusters.values():
            cluster.make()
            stack.callback(cluster.stack.close)
        specs = {t.name: t for t in exp.targets}
        stacks: dict[str, Stack] = {
            t.name: stack_for(t.name, specs, built,
                              [clusters[t.name].hooks()] if t.name in clusters else [],
                              probe=t.name not in clusters)
            for t in exp.targets}
        power = powercut.Power(base, disks)
        record["setup_s"] = round(time.monotonic() - started, 1)
        for index in range(cuts):
            check = index % check_every == 0 or index == cuts - 1
            _cycle(index, rng, window, power, stacks, clusters, script, ledger_dir, record,
                   check)
            _write(out, record)
        record["total_s"] = round(time.monotonic() - started, 1)
        _write(out, record)


def _lab_disks(spec: Any) -> list[str]:
    from volbench.faults.powerstack import lab_disks
    return lab_disks(spec)


def _cycle(index: int, rng: random.Random, window: tuple[float, float],
           power: powercut.Power, stacks: dict[str, Stack], clusters: dict[str, Cluster],
           script: Path, ledger_dir: Path, record: dict[str, Any], check: bool) -> None:
    began = time.monotonic()
    wait = rng.uniform(*window)
    cutter = Cutter(power, list(stacks.values()), ledger_dir, check=check)
    cycle = cutter.arm()
    cutter.commits = {n: c.commits(cycle, ledger_dir) for n, c in clusters.items()}
    armed = time.monotonic()
    cutter.start_probes()
    for name, cluster in clusters.items():
        stacks[name].processes.append(cluster.pgbench(cycle, script, ledger_dir))
    # The seeded wait runs from the moment every cluster has committed (see first_commit).
    firsts = {name: cluster.first_commit(cycle) for name, cluster in clusters.items()}
    time.sleep(wait)
    cutter.cut()
    outcome = cutter.recover()
    found = outcome.as_dict()
    found.update(index=index, wait_s=round(wait, 3), arm_s=round(armed - began, 3),
                 first_commit_s={n: None if f is None else round(f, 3) for n, f in firsts.items()},
                 cycle_s=round(time.monotonic() - began, 3))
    for name, cluster in clusters.items():
        if not outcome.stacks.get(name) or not outcome.stacks[name].recovery.ok \
                or not cluster.intact():
            cluster.make()  # a cluster that did not come back whole: a new one
            stacks[name].services = [cluster.hooks()]
    record["cycles"].append(found)
    print(f"cut {index}: waited {wait:.1f} s, cycle {found['cycle_s']:.0f} s, "
          + ", ".join(f"{n} {s.lost}{'' if s.recovery.ok else ' (no recovery)'}"
                      for n, s in outcome.stacks.items()), flush=True)
