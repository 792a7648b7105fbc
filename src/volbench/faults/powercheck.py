"""A `power-cut` checked against the experiment before anything runs (docs/durability.md).

Only the lab can cut power: a lab disk is wrapped so that what it had made durable can
be told from what it had only acknowledged (faults/powercut.py), and a host's disk
cannot be. So every target a power-cut workload runs on must be built, all the way
down, on lab disks, with a filesystem on top (the probe writes a file), of a kind the
recovery knows (disk, md RAID, LVM, NFS). The cut ends the run, and it wraps the lab
disks the experiment lists: it is the experiment's only fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from volbench.config.faults import POWER_CUT
from volbench.core.errors import Problem
from volbench.system.block.disks import listed_paths
from volbench.targets.base import TargetSpec
from volbench.workloads.base import WorkloadSpec

BY_ID = "/dev/disk/by-id/virtio-"
# Target kinds a cut can take down and bring back (faults/powerstack.py).
RECOVERABLE = ("disk", "mdraid", "lvm", "nfs")
# What the wrapper keeps of a lab disk (faults/powercut.py), and what mkfs.xfs needs.
WRAPPER_BYTES = 2 * 2**20
XFS_MIN_BYTES = 300 * 2**20  # as targets/loopdisk.py: xfsprogs 6 refuses less
# pgbench's built-in scripts the commit ledger extends (workloads/pgbench_ledger.py).
LEDGER_SCRIPTS = ("tpcb-like", "simple-update")


def has_power_cut(workloads: Sequence[WorkloadSpec]) -> bool:
    return any(f.action == POWER_CUT for w in workloads for f in w.faults)


def _stack(name: str, by_name: Mapping[str, TargetSpec]) -> list[TargetSpec]:
    found: list[TargetSpec] = []
    todo = [name]
    while todo:
        spec = by_name.get(todo.pop())
        if spec is not None and spec not in found:
            found.append(spec)
            todo += list(spec.on)
    return found


def _target_problem(spec: TargetSpec, by_name: Mapping[str, TargetSpec]) -> str | None:
    top_fs = getattr(spec, "fs", None)
    if top_fs is not None and not top_fs.mounted:
        return (f"target {spec.name} has no filesystem (fs: none): the cut's probe writes "
                "a file and reads it back")
    for layer in _stack(spec.name, by_name):
        if layer.type not in RECOVERABLE:
            return (f"target {layer.name} is type {layer.type}; a cut brings back "
                    f"{', '.join(RECOVERABLE)} targets")
        paths = listed_paths(layer)
        if not paths and not layer.on:
            return (f"target {layer.name} is on the host's disks (no lab disk): only the "
                    "lab can cut power")
        host = [p for p in paths if not p.startswith(BY_ID)]
        if host:
            return (f"target {layer.name} lists {host[0]}, not a lab disk: only the lab can "
                    "cut power")
    return None


def _workload_problems(where: str, workload: WorkloadSpec) -> list[Problem]:
    if workload.tool != "pgbench":
        return []
    found: list[Problem] = []
    matrix = getattr(workload, "matrix", {})
    scripts = [str(s) for s in matrix.get("script", ())]
    bad = [s for s in scripts if s not in LEDGER_SCRIPTS]
    if bad:
        found.append(Problem(f"{where}.script", f"a power cut counts commits with a row it "
                             f"adds to pgbench's {' or '.join(LEDGER_SCRIPTS)}; '{bad[0]}' is "
                             "not one", "use script: tpcb-like"))
    if "init" in [str(m) for m in matrix.get("mode", ())]:
        found.append(Problem(f"{where}.mode", "a power cut counts commits of measured "
                             "runs; pgbench -i has none", "use mode: run (the init is the "
                             "runs' untimed setup)"))
    if any(o.startswith(("-f", "--file", "-b", "--builtin", "-S", "-N"))
           for o in getattr(workload, "options", ())):
        found.append(Problem(f"{where}.options", "a power cut chooses pgbench's script (its "
                             "commit ledger)", "give script: and no -f/-b/-S/-N option"))
    if getattr(workload, "clients_from", ()):
        found.append(Problem(f"{where}.clients_from", "a power cut's commit ledger is "
                             "pgbench's own log on this machine", "remove clients_from"))
    return found


def _xfs_room(spec: TargetSpec, sizes: Mapping[str, int]) -> str | None:
    """xfs on one wrapped lab disk: the disk less the wrapper's 2 MiB must hold 300 MB."""
    fs = getattr(spec, "fs", None)
    paths = listed_paths(spec)
    if fs is None or fs.fs != "xfs" or len(paths) != 1 or not paths[0].startswith(BY_ID):
        return None
    size = sizes.get(paths[0][len(BY_ID):])
    if size is not None and size - WRAPPER_BYTES < XFS_MIN_BYTES:
        return (f"target {spec.name}: xfs needs 300M, and a power cut leaves "
                f"{(size - WRAPPER_BYTES) // 2**20}M of its {size // 2**20}M disk to the "
                "stack (the wrapper takes 1M at each end)")
    return None


def problems(targets: Sequence[TargetSpec], workloads: Sequence[WorkloadSpec],
             has_lab: bool, sizes: Mapping[str, int] | None = None) -> list[Problem]:
    """Why the experiment's power cuts cannot run, if they cannot (module doc). `sizes`:
    the lab disks' sizes by name."""
    if not has_power_cut(workloads):
        return []
    found: list[Problem] = []
    by_name = {t.name: t for t in targets}
    for w, workload in enumerate(workloads):
        cuts = [i for i, f in enumerate(workload.faults) if f.action == POWER_CUT]
        where = f"workloads[{w}]"
        if not cuts:
            if workload.faults:
                found.append(Problem(f"{where}.faults", "a power cut wraps every lab disk of "
                                     "the experiment; other faults cannot share it",
                                     "run the other faults in an experiment of their own"))
            continue
        if not has_lab:
            found.append(Problem(f"{where}.faults[{cuts[0]}]", "only the lab can cut power: "
                                 "the host's disks cannot be made to keep only what they had "
                                 "made durable", "add a lab: section and run it with "
                                 "volbench lab run"))
            continue
        for spec in targets:
            why = _target_problem(spec, by_name) or _xfs_room(spec, sizes or {})
            if why:
                found.append(Problem(f"{where}.faults[{cuts[0]}]", f"a power cut lands in "
                                     f"this workload's runs on every target, and {why}",
                                     "run the workload only where it can be cut (a "
                                     "separate experiment for the others)"))
        found += _workload_problems(where, workload)
    return found
