"""The runner's side of power cuts: the lab disks wrapped before any target is built, and
each measured run of a power-cut workload given its cut (engine/powercutrun.py).

Only in the lab: the file check refuses a power cut without a `lab:` section
(faults/powercheck.py), and a `volbench run` of such a file outside the VM stops here
with the command that runs it in the lab.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from volbench.core.errors import ResourceError, VolbenchError
from volbench.engine.experiment import Experiment
from volbench.engine.plan import Plan, PlannedRun, cut_of
from volbench.engine.powercutrun import PowerCutRun, moment
from volbench.faults import powercut
from volbench.faults.labdisk import CHANNEL_ENV
from volbench.faults.powercheck import has_power_cut
from volbench.faults.powercycle import CommitsCheck
from volbench.faults.powerstack import component, lab_disks, stack_for
from volbench.system import journal, proc
from volbench.system.host.hostinfo import inside_lab
from volbench.targets.base import Built
from volbench.workloads import pgbench_ledger as ledger
from volbench.workloads.base import ServiceHandle, WorkloadSpec
from volbench.workloads.pgbench import database
from volbench.workloads.pgbench_spec import TXLOG, PgbenchSpec


class CutSession(Protocol):
    """What of the runner's Session a cut needs."""

    exp: Experiment
    plan: Plan
    built: dict[str, Built]
    # The open services by (target, key): every server on a cut stack goes down with it.
    services: dict[tuple[str, str], ServiceHandle | str]
    power: powercut.Power | None
    redirect: dict[str, str]
    journal: journal.Journal
    workdir: Path


def wrap_disks(session: CutSession, scope: journal.Scope) -> None:
    """Wrap every lab disk the targets list, once, before any target is built."""
    exp = session.exp
    if not has_power_cut(exp.workloads):
        return
    if exp.lab is None or not inside_lab():
        raise ResourceError("power cuts run only in the lab, where a disk can be made to "
                            "keep only what it had made durable: volbench lab run FILE")
    names = sorted({d for t in exp.targets for d in lab_disks(t)})
    disks = powercut.cut_disks(exp.lab, names)
    session.redirect = powercut.wrap(scope, disks)
    session.power = powercut.Power(scope, disks)


def _ledgers(session: CutSession) -> Path:
    """Outside the stack under test: the folder the lab's host shares (over 9p)."""
    channel = os.environ.get(CHANNEL_ENV)
    root = Path(channel).parent / "ledgers" if channel else session.workdir / "ledgers"
    return root / f"{session.exp.name}-{os.getpid()}"


def _commits(cut: PowerCutRun, values: dict[str, str], db: str, rundir: Path,
             psql: str) -> CommitsCheck:
    """The rows back, compared with pgbench's log in its run folder."""
    def check(cut_at: float) -> ledger.Commits:
        logs = [p.read_text() for p in sorted(rundir.glob(f"{TXLOG}.*"))]
        done = proc.run([psql, "-X", "-At", "-h", values["host"], "-p", values["port"],
                         "-U", values["user"], "-d", db, "-c", ledger.query(cut.cycle)],
                        timeout=300)
        found = ledger.rows(done.stdout)
        counted = ledger.compare(ledger.acked(logs, cut_at), found)
        return ledger.Commits(counted.acked, counted.lost, counted.present,
                              counted.durable_unacked, ledger.lost_since(logs, found, cut_at))
    return check


def for_run(session: CutSession, run: PlannedRun, spec: WorkloadSpec, built: Built,
            service: ServiceHandle | None, rundir: Path) -> PowerCutRun | str | None:
    """The run's cut, armed (None: not a cut run; text: why it cannot be cut)."""
    fault = cut_of(spec) if not run.warmup else None
    if fault is None or session.power is None:
        return None
    specs = {t.name: t for t in session.exp.targets}
    inside = set(component(run.target, specs))
    hooks = [h.crash_hooks for (target, _), h in session.services.items()
             if target in inside and isinstance(h, ServiceHandle) and h.crash_hooks]
    stack = stack_for(run.target, specs, session.built, hooks, probe=spec.tool != "pgbench")
    at = moment(fault, session.plan.seed, f"{run.case_key}-{run.repetition}")
    cut = PowerCutRun(fault, at, stack, session.power.over(stack.disks), _ledgers(session),
                      spec.tool,
                      tracker=session.journal)
    try:
        if isinstance(spec, PgbenchSpec):
            assert service is not None
            values = dict(service.values)
            psql = str(Path(values["bindir"]) / "psql")
            db = database(spec, run.params)
            # Made by the role pgbench runs as (it owns the benchmark database).
            proc.run([psql, "-X", "-q", "-h", values["host"], "-p", values["port"], "-U",
                      values.get("bench_user", values["user"]), "-d", db, "-c",
                      ledger.CREATE], timeout=300)
            cut.cutter.commits = {stack.name: _commits(cut, values, db, rundir, psql)}
        cut.arm()
    except VolbenchError as exc:
        return f"the power cut could not be armed: {exc}"
    return cut
