"""Why runs disagree: the likely cause, read from what the machine was doing during each run.

The engine stores each run's activity (system/host/activity.py) in its annotations; this
module only reads those records, so it works on any stored database that has them
(databases from before have none, and get no cause rather than a guess).

The rules are plain and stated: another process kept at least BUSY_CPUS of a core busy,
or the load average was above the number of CPUs, or the hypervisor took STEAL_SHARE of
the CPU time: those runs had company. Settings that changed between runs (the CPU
frequency governor, vm.dirty_*, the target's cgroup caps) are named as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volbench.core.model import RunResult

BUSY_CPUS = 0.5
STEAL_SHARE = 0.1


def _activity(run: RunResult) -> Mapping[str, Any] | None:
    found = run.annotations.get("activity") if isinstance(run.annotations, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _number(record: Mapping[str, Any], key: str) -> float:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


def busy(record: Mapping[str, Any]) -> bool:
    """Did other work share the machine during this run?"""
    cpus = _number(record, "cpus") or 1.0
    load = max(_number(record, "load1_start"), _number(record, "load1_end"))
    return _number(record, "other_cpus") >= BUSY_CPUS or load > cpus


def had_company(run: RunResult) -> bool | None:
    """Did other work share the machine during `run`? None when it has no record."""
    found = _activity(run)
    return None if found is None else busy(found)


def _runs_text(reps: Sequence[int]) -> str:
    if len(reps) == 1:
        return f"run {reps[0]}"
    return "runs " + ", ".join(str(r) for r in reps[:-1]) + f" and {reps[-1]}"


def _company(records: Sequence[tuple[int, Mapping[str, Any]]]) -> str | None:
    crowded = [(rep, r) for rep, r in records if busy(r)]
    if not crowded:
        return None
    other = max(_number(r, "other_cpus") for _, r in crowded)
    load = max(max(_number(r, "load1_start"), _number(r, "load1_end")) for _, r in crowded)
    facts = f"up to {other:.1f} CPUs busy outside the workload, load average {load:.1f}"
    if len(crowded) == len(records):
        return f"other work on this machine during every run ({facts})"
    return (f"other work on this machine during {_runs_text([rep for rep, _ in crowded])} "
            f"({facts}; the other runs had it quiet)")


def _steal(records: Sequence[tuple[int, Mapping[str, Any]]]) -> str | None:
    stolen = [(rep, _number(r, "steal_cpus") / (_number(r, "cpus") or 1.0))
              for rep, r in records]
    high = [(rep, share) for rep, share in stolen if share >= STEAL_SHARE]
    if not high:
        return None
    worst = max(share for _, share in high)
    return (f"the hypervisor took up to {worst * 100:.0f} % of CPU time (steal) during "
            f"{_runs_text([rep for rep, _ in high])}: a busy host")


def _changed(records: Sequence[tuple[int, Mapping[str, Any]]]) -> str | None:
    names = {"governor": "CPU frequency governor", "vm_dirty": "vm.dirty_* settings",
             "cgroup_caps": "the target's cgroup caps"}
    for key, words in names.items():
        seen = [repr(r.get(key)) for _, r in records]
        if len(set(seen)) > 1:
            return f"the {words} changed between runs"
    return None


def likely_cause(runs: Sequence[RunResult], indices: Sequence[int], *,
                 in_vm: bool = False) -> str | None:
    """The likely cause of disagreement between the runs at `indices` (positions in
    `runs`), in words, or None when the runs carry no activity records. When the machine
    was quiet throughout, says so: the spread is then the target's own. In a VM (`in_vm`,
    the lab) the records are the guest's: a busy host shows only as steal time, which an
    emulated guest does not report, so a quiet guest is not called a quiet machine."""
    records = []
    for i in indices:
        found = _activity(runs[i]) if 0 <= i < len(runs) else None
        if found is not None:
            records.append((runs[i].repetition, found))
    if not records:
        return None
    causes = [c for c in (_company(records), _steal(records), _changed(records)) if c]
    if causes:
        return "likely cause: " + "; ".join(causes)
    if in_vm:
        return "the guest was quiet during these runs (a VM cannot see its host's load)"
    return "the machine was quiet during these runs: the spread is the target's own"
