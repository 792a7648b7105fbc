"""`volbench lab run FILE`: a whole experiment inside the lab VM, results back on the host.

1. The experiment is parsed on the host (every problem reported before booting),
   and every /dev/disk/by-id/virtio-NAME a target lists must be a lab disk.
2. A shared outdir gets a copy of the file, and of the database if it exists
   (so results add up across runs and --resume works).
3. The guest runs `python -m volbench.cli.labguest --outdir OUT -- run OUT/experiment.yaml …`
   with the same volbench (lab/guest.py).
4. The database comes back to --db (replaced atomically), the console next to it
   (`<db stem>-lab-console.log`); the outdir and the disk images are removed.

The guest works on a copy, so two lab runs on one database would each bring back
their copy and the later one would erase the earlier one's results. One lab run per
database therefore holds a lock (`<db>.lab-lock`, flock) and a second one is refused
at once. If the database changed anyway while the VM ran (a `volbench run` on the
host wrote to it), the lab's copy is not put over it: it is kept beside it,
`<db stem>-lab-<pid>.db`, and the message says so — nothing is lost either way.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config.lab import LabSpec, referenced_disks
from volbench.core.errors import ExperimentError, Problem
from volbench.engine import experiment
from volbench.faults import powercut
from volbench.faults.powercheck import has_power_cut
from volbench.faults.powerstack import lab_disks
from volbench.lab.errors import LabError
from volbench.lab.events import PROGRESS, following
from volbench.lab.vm import DEFAULT_WORKDIR, LabResult, run_in_vm
from volbench.system import journal
from volbench.system.block.mounts import make_tree

EXAMPLE = (
    "lab: {disks: [{name: d1, size: 2G, class: standard}]} and a target such as "
    "{name: plain, type: disk, device: /dev/disk/by-id/virtio-d1}"
)


@dataclass(frozen=True)
class LabRunOutcome:
    returncode: int
    db: Path | None
    console_log: Path
    result: LabResult
    # Set when the database changed while the VM ran: the lab's results went to `db`,
    # a file beside the database, instead of replacing it.
    kept_aside: bool = False


class DatabaseBusy(LabError):
    """Another `lab run` is using this results database."""


@contextmanager
def _one_lab_run(db: Path) -> Iterator[None]:
    lock_path = db.with_name(db.name + ".lab-lock")
    with open(lock_path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise DatabaseBusy(
                f"another `volbench lab run` ({holder}) is using {db}; its results would "
                "overwrite this run's. Wait for it, or give this run its own --db"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"PID {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fingerprint(db: Path) -> tuple[int, int] | None:
    """What tells that a database file changed: its size and modification time (SQLite
    rewrites pages in place, so any commit changes the time), or None when absent."""
    try:
        st = db.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def lab_of(exp: experiment.Experiment, source: str) -> LabSpec:
    """The experiment's lab, checked against the disks its targets list."""
    lab: LabSpec | None = getattr(exp, "lab", None)
    if lab is None:
        raise ExperimentError(
            [Problem("lab", "the experiment has no lab: section", f"add one, e.g. {EXAMPLE}")],
            source,
        )
    names = {d.name for d in lab.disks}
    missing = sorted(referenced_disks(exp.document) - names)
    have = ", ".join(sorted(names)) or "none"
    if missing:
        raise ExperimentError(
            [
                Problem(
                    "targets",
                    f"/dev/disk/by-id/virtio-{m} is not a lab disk",
                    f"add {{name: {m}}} to lab: disks (lab disks: {have})",
                )
                for m in missing
            ],
            source,
        )
    return lab


def run_experiment_in_lab(
    file: Path,
    *,
    db: Path,
    cli_args: Sequence[str] = (),
    workdir: Path | None = None,
    timeout: float | None = None,
    on_output: Callable[[str], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> LabRunOutcome:
    """Run `volbench run FILE CLI_ARGS…` in the lab described by FILE's `lab:` section;
    `on_progress` gets each progress event of the guest's run (lab/events.py)."""
    exp = experiment.load(file)
    lab = with_cut_log(exp, lab_of(exp, str(file)))
    base = (workdir or DEFAULT_WORKDIR).resolve()
    base.mkdir(parents=True, exist_ok=True)
    console_log = db.with_name(db.stem + "-lab-console.log")
    with _one_lab_run(db), journal.opened(f"lab run {exp.name}") as jrnl, \
            jrnl.scope() as scope:
        outdir = make_tree(scope, base / f"out-{os.getpid()}")
        shutil.copyfile(file, outdir / "experiment.yaml")
        before = _fingerprint(db)
        if before is not None:
            shutil.copyfile(db, outdir / "results.db")
        # In the guest: `volbench run` on the copy, database kept on guest tmpfs (guest.py).
        argv = [sys.executable, "-m", "volbench.cli.labguest", "--outdir", str(outdir), "--"]
        argv += ["run", str(outdir / "experiment.yaml"), "--no-report", "--paths-from",
                 str(file.absolute().parent), *cli_args]
        try:
            with following(outdir / ".lab" / PROGRESS, on_progress):
                result = run_in_vm(lab, argv, outdir, timeout=timeout, workdir=base,
                                   cwd=Path.cwd(), on_output=on_output, scope=scope)
        finally:
            # Whatever happened, the console and any results reached so far come back.
            log = outdir / ".lab" / "console.log"
            if log.exists():
                shutil.copyfile(log, console_log)
            changed = _fingerprint(db) != before
            target = db.with_name(f"{db.stem}-lab-{os.getpid()}.db") if changed else db
            brought = _bring_back(outdir / "results.db", target)
        if result.returncode != 0 and brought is None:
            raise LabError(
                f"volbench in the lab VM exited with {result.returncode} and stored "
                f"no results; the console is in {console_log}"
            )
        return LabRunOutcome(result.returncode, brought, console_log, result,
                             kept_aside=changed and brought is not None)


def with_cut_log(exp: experiment.Experiment, lab: LabSpec) -> LabSpec:
    """The lab with the log disk its power cuts need (faults/powercut.py), if it has any."""
    if not has_power_cut(exp.workloads):
        return lab
    names = sorted({d for t in exp.targets for d in lab_disks(t)})
    return powercut.with_log_disk(lab, names)


def _bring_back(shared: Path, db: Path) -> Path | None:
    if not shared.exists():
        return None
    tmp = db.with_name(db.name + ".lab-tmp")
    shutil.copyfile(shared, tmp)
    tmp.replace(db)
    return db
