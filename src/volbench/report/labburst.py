"""Runs on a bursting lab disk that were too short to leave the burst.

In the lab the burst is known in advance: a class with `burst_iops` (or `burst_bps`) and
`burst_seconds` is recorded with the disks, and QEMU's bucket lets a rested disk burst
for burst * burst_seconds / (burst - cap) seconds (docs/lab.md). A run on such a disk
that shows no burst/sustained windows and lasted no longer than that measured the burst
only, whatever the detector could see in it; this names the rate it measured and the run
length needed to see the class's sustained rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volbench.core.model import RunResult, Status, TargetRow
from volbench.report.checks import ReportWarning, describe_case
from volbench.report.timeline import SECONDS, level_text

# (rate metric, its unit, the cap it is judged against)
_RATES = (("iops", "op/s", "iops"), ("bw", "B/s", "bps"))


def burst_length(caps: Mapping[str, Any], key: str) -> float | None:
    """Seconds a rested disk bursts above cap `key` (iops, bps, read_iops …), or None."""
    base, burst, length = caps.get(key), caps.get(f"burst_{key}"), caps.get("burst_seconds")
    if not all(isinstance(v, int | float) for v in (base, burst, length)):
        return None
    assert isinstance(base, int | float) and isinstance(burst, int | float)
    assert isinstance(length, int | float)
    return burst * length / (burst - base) if burst > base else None


def _lab_caps(environment: Mapping[str, Any], targets: Sequence[TargetRow]
              ) -> dict[str, Mapping[str, Any]]:
    """Target name -> caps of the lab disk it was built on directly (type disk)."""
    lab = environment.get("lab")
    disks = lab.get("disks", []) if isinstance(lab, Mapping) else []
    by_device = {d.get("device"): d.get("caps") or {} for d in disks if isinstance(d, Mapping)}
    out = {}
    for t in targets:
        disk = t.info.get("disk") if isinstance(t.info, Mapping) else None
        listed = disk.get("listed") if isinstance(disk, Mapping) else None
        if listed in by_device:
            out[t.name] = by_device[listed]
    return out


def short_runs(runs: Sequence[RunResult], targets: Sequence[TargetRow],
               environment: Mapping[str, Any], labels: Mapping[str, list[str]]
               ) -> list[ReportWarning]:
    caps_of = _lab_caps(environment, targets)
    found: dict[tuple[str, str], list[tuple[int, float, str, str, float, float]]] = {}
    for index, run in enumerate(runs):
        caps = caps_of.get(run.target)
        if caps is None or run.status is not Status.OK or run.warmup:
            continue
        if any(m.name in SECONDS for m in run.metrics):
            continue  # the run left its burst: the time line tells it
        for metric, unit, key in _RATES:
            length = burst_length(caps, key)
            value = next((m.value for m in run.metrics if m.name == metric
                          and "window" not in m.tags and m.value is not None), None)
            if length is None or value is None or run.ended - run.started > length:
                continue
            found.setdefault((run.target, run.workload), []).append(
                (index, float(value), unit, key, length, float(caps[key])))
    out = []
    for (target, workload), items in found.items():
        index, value, unit, key, length, cap = items[0]
        run = runs[index]
        label = " ".join(f"{k}={run.params[k]}" for k in labels.get(workload, [])
                         if k in run.params)
        out.append(ReportWarning(
            "time-window",
            f"{describe_case(target, workload, label)}: {len(items)} run(s) ended inside the "
            f"burst of their lab disk (e.g. rep {run.repetition}: {level_text(value, unit)} "
            f"in {run.ended - run.started:.0f} s; the class bursts for up to {length:.0f} s "
            f"from a rested disk, then holds {level_text(cap, unit)}): the figure is "
            f"the burst; run longer than {length * 1.5 + 10:.0f} s to see the sustained level",
            target, workload, run.params, "", tuple(i for i, *_ in items)))
    return out
