"""`volbench lab run FILE`: a whole experiment inside the lab VM, results back on the host.

1. The experiment is parsed on the host (every problem reported before booting),
   and every /dev/disk/by-id/virtio-NAME a target lists must be a lab disk.
2. A shared outdir gets a copy of the file, and of the database if it exists
   (so results add up across runs and --resume works).
3. The guest runs `python -m volbench.lab --outdir OUT -- run OUT/experiment.yaml …`
   with the same volbench (lab/guest.py).
4. The database comes back to --db (replaced atomically), the console next to it
   (`<db stem>-lab-console.log`); the outdir and the disk images are removed.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from volbench.config.lab import LabSpec, referenced_disks
from volbench.core.errors import ExperimentError, Problem
from volbench.engine import experiment
from volbench.lab.errors import LabError
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
) -> LabRunOutcome:
    """Run `volbench run FILE CLI_ARGS…` in the lab described by FILE's `lab:` section."""
    exp = experiment.load(file)
    lab = lab_of(exp, str(file))
    base = (workdir or DEFAULT_WORKDIR).resolve()
    base.mkdir(parents=True, exist_ok=True)
    console_log = db.with_name(db.stem + "-lab-console.log")
    with journal.opened(f"lab run {exp.name}") as jrnl, jrnl.scope() as scope:
        outdir = make_tree(scope, base / f"out-{os.getpid()}")
        shutil.copyfile(file, outdir / "experiment.yaml")
        if db.exists():
            shutil.copyfile(db, outdir / "results.db")
        # In the guest: `volbench run` on the copy, database kept on guest tmpfs (guest.py).
        argv = [sys.executable, "-m", "volbench.lab", "--outdir", str(outdir), "--"]
        argv += ["run", str(outdir / "experiment.yaml"), "--paths-from",
                 str(file.absolute().parent), *cli_args]
        try:
            result = run_in_vm(lab, argv, outdir, timeout=timeout, workdir=base, cwd=Path.cwd(),
                               on_output=on_output, scope=scope)  # fmt: skip
        finally:
            # Whatever happened, the console and any results reached so far come back.
            log = outdir / ".lab" / "console.log"
            if log.exists():
                shutil.copyfile(log, console_log)
            brought = _bring_back(outdir / "results.db", db)
        if result.returncode != 0 and brought is None:
            raise LabError(
                f"volbench in the lab VM exited with {result.returncode} and stored "
                f"no results; the console is in {console_log}"
            )
        return LabRunOutcome(result.returncode, brought, console_log, result)


def _bring_back(shared: Path, db: Path) -> Path | None:
    if not shared.exists():
        return None
    tmp = db.with_name(db.name + ".lab-tmp")
    shutil.copyfile(shared, tmp)
    tmp.replace(db)
    return db
