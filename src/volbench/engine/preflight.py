"""What can be checked before an experiment touches anything: root, paths that would leave
their targets, lab disks outside the lab, the tools, the programs' versions, the space for
the images.

Its own module so that `volbench plan FILE`, which runs these checks and nothing else,
does not import the runner and everything a run needs (start-up: docs/architecture.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from volbench.config import pathcheck
from volbench.config.lab import referenced_disks
from volbench.core.errors import ExperimentError, Problem, ResourceError
from volbench.engine.experiment import Experiment, root_problems
from volbench.engine.plan import Plan
from volbench.system.host import tools
from volbench.system.host.hostinfo import inside_lab
from volbench.targets import KINDS as TARGET_KINDS
from volbench.targets import placeholder, precondition
from volbench.workloads import KINDS as WORKLOAD_KINDS


def required_tools(exp: Experiment) -> list[str]:
    """Every program the experiment's targets, their preconditioning and its workloads need,
    sorted, for the checks before anything runs."""
    names = {t for spec in exp.targets
             for t in TARGET_KINDS[spec.type].tools + precondition.tools(spec)}
    names |= {t for spec in exp.workloads for t in WORKLOAD_KINDS[spec.tool].tools}
    return sorted(names)


def program_versions(exp: Experiment) -> dict[str, str]:
    """Versions of the programs workloads find themselves (PostgreSQL: pgfind); raises
    when one is missing. A second workload with another version gets its own key."""
    versions: dict[str, str] = {}
    for spec in exp.workloads:
        check = WORKLOAD_KINDS[spec.tool].programs
        for name, version in (check(spec) if check else {}).items():
            key = name if versions.get(name, version) == version else f"{name}[{spec.name}]"
            versions[key] = version
    return versions


def confinement_problems(exp: Experiment, plan: Plan) -> list[Problem]:
    """Paths in workloads' options and job files that would leave their targets.

    The targets are not built yet: their directory and device are ${VOLBENCH_DIR} and
    ${VOLBENCH_DEV}, so only paths written that way (or relative ones) can pass; the
    same check runs again on the built target right before the tool starts."""
    found: dict[str, Problem] = {}
    for run in plan.runs(1):
        spec = exp.workload(run.workload)
        check = WORKLOAD_KINDS[spec.tool].confinement
        if check is None:
            continue
        raw = placeholder(exp.target(run.target)).path is None
        place = pathcheck.Place(None if raw else f"${{{pathcheck.DIR_VAR}}}",
                                f"${{{pathcheck.DEV_VAR}}}" if raw else None, known=False)
        for problem in check(spec, run.params, place):
            found.setdefault(str(problem), problem)
    return list(found.values())


def lab_problems(exp: Experiment) -> list[Problem]:
    """Targets on the file's own lab disks, run outside the lab VM.

    Those disks (/dev/disk/by-id/virtio-NAME) exist only in the VM that `volbench lab run`
    boots. Without this check a plain `volbench run` of such a file (examples/
    commit-latency.yaml) went on and failed each target apart, with "not a block device"
    or "this kernel has no device-mapper", and stored an experiment without runs. A disk
    of that name that does exist here (a host that is itself a VM with such a serial) is
    the user's to name, so only absent ones count."""
    if exp.lab is None or inside_lab():
        return []
    names = {d.name for d in exp.lab.disks}
    absent = sorted(n for n in referenced_disks(exp.document) & names
                    if not Path(f"/dev/disk/by-id/virtio-{n}").exists())
    if not absent:
        return []
    shown = ", ".join(absent[:3]) + (f" and {len(absent) - 3} more" if len(absent) > 3 else "")
    return [Problem("lab", f"the targets use this file's lab disks ({shown}), which exist only "
                    "in the lab VM; volbench run does not start it",
                    "run the file there: volbench lab run FILE (docs/lab.md)")]


def preflight(exp: Experiment, plan: Plan) -> dict[str, str]:
    """Everything that can be checked before touching anything; returns program_versions."""
    problems = lab_problems(exp) + root_problems(exp) + confinement_problems(exp, plan)
    if problems:
        raise ExperimentError(problems, exp.name)
    for name in required_tools(exp):
        tools.require(name)
    versions = program_versions(exp)
    need = plan.disk_space()
    if need:
        probe = exp.workdir if exp.workdir.exists() else exp.workdir.parent
        free = shutil.disk_usage(probe).free
        if free < need * 1.1:
            raise ResourceError(
                f"the images need {need / 2**30:.1f} GiB but {probe} has only "
                f"{free / 2**30:.1f} GiB free; set workdir: to a larger filesystem or use "
                "smaller disk sizes")
    return versions
