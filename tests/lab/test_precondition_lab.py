"""A thin volume preconditioned in the lab: the pool's data % is recorded once built and as
each run starts; an unfilled thin volume beside it stays nearly empty. One step of the
shared lab boot (`shared_boot`, tests/lab/conftest.py): its disks are c1 and c2."""

from __future__ import annotations

from typing import Any

import pytest

from volbench.store.db import Store

EXPERIMENT = """
name: thin-state
lab:
  disks:
    - {name: c1, size: 400M, class: fast}
    - {name: c2, size: 400M, class: fast}
targets:
  - {name: fresh, type: lvm, layout: thin, devices: [/dev/disk/by-id/virtio-c1]}
  - {name: filled, type: lvm, layout: thin, devices: [/dev/disk/by-id/virtio-c2],
     precondition: {discard: true, fill: 1x}}
workloads:
  - {name: w, tool: fio, rw: randwrite, bs: 4k, size: 16M, runtime: 2s}
repeat: 1
"""


@pytest.mark.lab
@pytest.mark.slow
def test_thin_pool_data_percent_is_recorded(shared_boot: dict[str, Any]) -> None:
    db = shared_boot["db"]("precondition")
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        states = {t.name: t.info["state"] for t in store.targets(row.id)}
        runs: dict[str, list[Any]] = {}
        for r in store.runs([row.id]):
            runs.setdefault(r.target, []).append(r)
    fresh, filled = states["fresh"], states["filled"]
    assert fresh["state"] == "fresh" and filled["state"] == "preconditioned"
    # mkfs.xfs writes a fifth of this small thin volume (seen: 18.5 %, its log); the fill
    # wrote the free space too (seen: 94.5 %)
    assert fresh["thin_pool_data_percent"] < 40, fresh
    assert filled["thin_pool_data_percent"] > 85, filled
    assert filled["precondition"]["fill"]["what"] == "free space of the filesystem"
    for name, state in (("fresh", fresh), ("filled", filled)):
        seen = [r.annotations["target_state"]["thin_pool_data_percent"] for r in runs[name]]
        assert len(seen) == 1 and seen[0] >= state["thin_pool_data_percent"], seen
