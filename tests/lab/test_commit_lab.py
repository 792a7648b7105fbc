"""What a commit costs in the lab: ground truth on flushes (a step of the shared lab boot,
tests/lab/conftest.py).

fio 4k random writes at QD1 with an fdatasync after every write (`sync: {fdatasync: 1}`)
on three targets, in interleaved rounds: each round runs the three back to back, 2 s
each, so every comparison is between slices a few seconds apart (a paired, same-moment
design: the host's load moves all three alike), and the assertions are on ratios of
paired runs' medians.

- `wt`: xfs on a lab disk of the default write-through class (500 IOPS, 50 MiB/s): the
  guest sends no flush at all, an fdatasync of an overwrite costs the guest's CPU only;
- `wb`: xfs on the same class with `write_cache: write-back`: every fdatasync ends in one
  flush, which QEMU turns into an fdatasync of the disk's image file on the host;
- `lvm25`: LVM linear over 25 disks of that write-back class: device-mapper sends each
  flush to every disk, 25 flushes per fdatasync.

Measured in four boots (2026-11-28, 5 rounds each, the host at load 7-12 with other
engineers' jobs and VMs): flushes per sync 0 on wt in every run, 1.000-1.019 on wb and
25.000-25.097 on lvm25 (one flush per sync and disk, plus the filesystem's own log work);
mean sync latency wt 27-44 µs, wb 1.65-1.87 ms, lvm25 4.8-6.02 ms; paired ratios by round
wb/wt 44.6-75.9 (median 73), 7.8-113 (55.5), 41.8-286 (127) and 21.8-222 (47.5): the
write-through sync is tens of µs of the emulated CPU and spikes when the host is busy;
lvm25/wb 1.68-4.03 (median 3.1), 2.95-3.46 (3.15), 1.81-4.40 (2.51) and 1.93-4.97
(2.76). So the flushes follow the fan-out exactly, but the latency does not: a sync on 25
disks waited 2.5-3.2 times as long as on one, not 25 times; the 25 flushes run side by
side (QEMU serves each disk's flush in a worker thread of its own; that the host's journal
then commits their fdatasyncs together is likely, not measured). The report's
comparisons of the sync call, wb vs wt: mean 65.9× [44, 98.7], 42.8× [8.15, 225] and
55.4× [25.7, 119] slower, p99 136× [33.8, 545], 60.5× [5.7, 642] and 180× [49.8, 651]. A committer also waits for its write
(~2 ms at the cap, its tail stretched by the host's load): the headline mean commit
latency wb vs wt 2.72× [1.26, 5.84] slower at load 11-12, not decided in the fourth boot
(1.5×, -56 % to +408 %), the commits' p99 not decided in either.

Asserted, with that spread as the tolerance's basis:
- flushes per sync: wt 0, wb 0.99-1.05, lvm25 0.99-1.05 × 25;
- wb vs wt: the report's comparisons of the sync call's p99 and mean are "slower" with
  their whole 95 % interval at least 2× (lowest measured 5.7×), and say so in the
  details table; the paired median ratio of the sync's mean at least 10 (lowest
  measured 47.5); the commit's headline figures (mean, p99) at least 1.2× the
  write-through ones' (their point ratio: the write they share narrows the gap);
- lvm25 vs wb: the paired median of the mean sync latency between 1.3× (the extra
  flushes must cost: lowest round measured 1.68) and 12.5× (half the fan-out: they
  overlap; highest round 4.97).

The step takes 237-336 s of the shared boot at load 7-12 (with the boot's 27 more disks).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from support import load
from volbench import report
from volbench.core.model import RunResult
from volbench.report import answer
from volbench.report.options import ReportOptions
from volbench.stats import Verdict
from volbench.store.db import Store

ROUNDS = 5
FANOUT = 25
_LV = ", ".join(f"/dev/disk/by-id/virtio-cml{i}" for i in range(1, FANOUT + 1))
EXPERIMENT = f"""
name: lab-commit
lab:
  classes:
    commit-wb: {{iops: 500, bps: 50M, write_cache: write-back}}
  disks:
    - {{name: cmt, size: 512M, class: standard}}
    - {{name: cmb, size: 512M, class: commit-wb}}
    - {{name: cml, count: {FANOUT}, size: 64M, class: commit-wb}}
targets:
  - {{name: wt, type: disk, device: /dev/disk/by-id/virtio-cmt, fs: xfs}}
  - {{name: wb, type: disk, device: /dev/disk/by-id/virtio-cmb, fs: xfs}}
  - {{name: lvm25, type: lvm, devices: [{_LV}]}}
workloads:
  - {{name: commit, tool: fio, rw: randwrite, bs: 4k, iodepth: 1, size: 16M, runtime: 2s,
     sync: {{fdatasync: 1}}}}
repeat: {ROUNDS}
baseline: wt
"""


def _value(run: RunResult, name: str) -> float:
    (found,) = [m.value for m in run.metrics if m.name == name and dict(m.tags) == {"op": "sync"}]
    assert found is not None
    return found


def _runs(db: Path) -> dict[tuple[str, int], RunResult]:
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = store.runs([row.id])
    assert all(str(r.status) == "ok" for r in runs), [r.error for r in runs]
    return {(r.target, r.repetition): r for r in runs}


def paired(runs: dict[tuple[str, int], RunResult], a: str, b: str, name: str) -> list[float]:
    """a/b of `name` in each round (the two runs seconds apart)."""
    return [_value(runs[(a, n)], name) / _value(runs[(b, n)], name)
            for n in range(1, ROUNDS + 1)]


def flushes_per_sync(run: RunResult) -> float:
    return float(run.annotations["device_io"]["flushes"]) / _value(run, "total_ios")


@pytest.fixture(scope="module")
def commit_db(shared_boot: dict[str, Any]) -> Path:
    print(f"lab commit step: {shared_boot['steps']['commit']['seconds']:.0f} s")
    db: Path = shared_boot["db"]("commit")
    return db


@pytest.mark.lab
@pytest.mark.slow
def test_each_sync_flushes_once_per_write_back_disk(commit_db: Path) -> None:
    runs = _runs(commit_db)
    per = {t: [flushes_per_sync(runs[(t, n)]) for n in range(1, ROUNDS + 1)]
           for t in ("wt", "wb", "lvm25")}
    print("flushes per sync", per)
    # exactly one flush per sync and disk; the filesystem's own log work adds a few
    # (measured up to +1.9 % on wb, +0.4 % on lvm25); write-through disks never flush
    assert all(f == 0 for f in per["wt"]), per
    assert all(0.99 <= f <= 1.05 for f in per["wb"]), per
    assert all(0.99 * FANOUT <= f <= 1.05 * FANOUT for f in per["lvm25"]), per


@pytest.mark.lab
@pytest.mark.slow
def test_write_through_syncs_far_faster_and_the_verdict_says_so(commit_db: Path) -> None:
    runs = _runs(commit_db)
    ratios = paired(runs, "wb", "wt", "lat_mean")
    print("wb/wt mean sync latency by round", ratios)
    assert statistics.median(ratios) >= 10, ratios
    built = load(commit_db)
    rows = {v.candidate.metric: v for v in built.verdicts
            if v.target == "wb" and v.candidate.tags.get("op") == "sync"}
    print("\n".join(answer.answer_lines(built)))
    # the sync call's own p99 and mean: descriptions, each with its 95 % interval
    for metric in ("lat_p99", "lat_mean"):
        c = rows[metric].comparison
        assert c is not None and c.verdict is Verdict.WORSE, rows[metric]
        assert c.ratio_ci is not None and c.ratio_ci.low >= 2, (metric, c.ratio_ci)
    # a committer waits for its write too (~2 ms at the disk's cap, with a tail the host's
    # load stretches: the write-through commit's p99 was 26 ms at load 12), so its headline
    # figures differ by less and only their direction is asserted
    for metric in ("commit_lat_mean", "commit_lat_p99"):
        c = rows[metric].comparison
        assert rows[metric].is_verdict and c is not None and c.ratio > 1.2, (metric, c)
    table = report.render(built, "table", ReportOptions(details=True))
    line = next(t for t in table.splitlines() if t.startswith("wb ") and " lat_mean " in t
                and " sync " in t and "secondary" in t)
    assert "secondary, not a verdict: ×" in line, line  # "×42.8 [×8.15, ×225]": ≥ 2×


@pytest.mark.lab
@pytest.mark.slow
def test_lvm_over_25_disks_waits_for_its_fanned_out_flushes(commit_db: Path) -> None:
    runs = _runs(commit_db)
    ratios = paired(runs, "lvm25", "wb", "lat_mean")
    print("lvm25/wb mean sync latency by round", ratios)
    assert 1.3 <= statistics.median(ratios) <= FANOUT / 2, ratios
