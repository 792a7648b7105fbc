"""What a commit costs in the lab: ground truth on flushes (a step of the shared lab boot,
tests/lab/conftest.py).

fio 4k random writes at QD1 with an fdatasync after every write (`sync: {fdatasync: 1}`)
on three targets, in interleaved rounds: each round runs the three back to back, 1 s
each, so every comparison is between slices a few seconds apart (a paired, same-moment
design: the host's load moves all three alike), and the assertions are on ratios of
paired runs' medians.

- `wt`: xfs on a lab disk of a write-through class (5000 IOPS, 200 MiB/s: the write costs
  the guest's CPU, not a cap's slice): the guest sends no flush at all, an fdatasync of
  an overwrite costs the guest's CPU only;
- `wb`: xfs on the same caps with `write_cache: write-back`: every fdatasync ends in one
  flush, which QEMU turns into an fdatasync of the disk's image file on the host;
- `lvm12`: LVM linear over 12 disks of that write-back class: device-mapper sends each
  flush to every disk, 12 flushes per fdatasync.

Measured in two boots of this step (2026-11-28, the host at load 9-11 with other
engineers' jobs and VMs; 5 then 4 rounds): flushes per sync 0 on wt in every run, 1.000
on wb and 12.000 on lvm12; mean sync latency wt 39-42 µs, wb 1.38-2.32 ms, lvm12
2.24-4.57 ms; paired medians wb/wt 53.2 and 33.1 (rounds 21.9-78.7), lvm12/wb 2.08 and
1.56 (rounds 1.19-2.89). The report's comparisons of the sync call, wb vs wt: p99 73.4×
and 46.2× (interval low ends 45 and 7.25), mean 55.7× and 35.1× (38.5 and 14.9). The
headline mean commit latency wb vs wt 2.07× and 1.35× (point ratios). So the flushes
follow the fan-out exactly, the latency does not: 12 flushes side by side cost 1.6-2.1
times one (25 cost 2.5-3.2 times one in four earlier boots of 25 disks, docs/lab.md):
QEMU serves each disk's flush in a worker thread of its own.

Asserted, with that spread as the tolerance's basis:
- flushes per sync: wt 0, wb 0.99-1.05, lvm12 0.99-1.05 × 12 (counts, not speed);
- wb vs wt: the report's comparisons of the sync call's p99 and mean are "slower" with
  their whole 95 % interval at least 2×, and say so in the details table; the paired
  median ratio of the sync's mean at least 10; the commit's headline mean "slower" with
  its 95 % interval's low end at least 1.3× (measured 1.92 quiet, 2.37 beside a CPU hog;
  the commits' p99 is not asserted, see the test);
- lvm12 vs wb: the paired median of the sync's median latency (its p50) between 1.2×
  (the extra flushes must cost) and 6× (half the fan-out: they overlap). Measured: on a
  quiet host (CI boot of 2026-11-28) rounds 1.56-1.97, median 1.90; beside
  `stress-ng --cpu 2 --cpu-method matrixprod` (load 3.7) rounds 2.28-2.53, median 2.36.
  It was the mean until a hog run of the whole test command (2026-11-28, load 4.9) read
  a median of 1.13 (rounds 0.83-1.74) where quiet boots read 1.46-2.03: a slice the hog
  preempts gets a few long syncs, which move its mean, not its median (in the hog boot
  above the mean's rounds spread 1.69-2.54, the median's 2.28-2.53).

What the step adds to the shared boot: 126-185 s at load 9-11 (the boot's VM 228-297 s
with this step alone), and 14 disks (31 to 45). It was 237-336 s with 25 disks, 5 rounds
of 2 s and 16M files; 12 disks, rounds of 1 s and 8M files keep every ground truth above
(the sync call's interval low ends stay above 7×, the bound 2×). Eight rounds since
2026-11-29 (four before; see ROUNDS).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from support import load
from volbench import report
from volbench.core.model import RunResult
from volbench.report import answer
from volbench.report.options import ReportOptions
from volbench.stats import Verdict
from volbench.store.db import Store

# Eight rounds, not four: in the quiet run of 2026-11-29 (fresh15, load 3.3) wt's commit
# mean read 0.66-1.09 ms over four rounds (a write-through write is an O_DSYNC write of
# the disk's image on the host, whose time moves with the host's disk), and the
# headline's interval at four rounds, 1.96x [1.08, 3.55], failed its 1.3x floor. The
# report's Welch interval (at the family's level) narrows with the rounds through both
# √n and the t quantile's degrees of freedom: the same four values twice give [1.50, 2.55]
# at the 99 % level (four gave [1.03, 3.72] there; the report's [1.08, 3.55] is its family
# level, near 99 %). Each round adds ~15 s to the step (three 1-s runs in the guest).
ROUNDS = 8
# Twelve disks, not 25 (the fan-out examples/commit-latency.yaml shows): the flush count
# proves the fan-out at any width, and each disk costs the shared boot its setup, the
# LVM's build and teardown.
FANOUT = 12
LVM = f"lvm{FANOUT}"
_LV = ", ".join(f"/dev/disk/by-id/virtio-cml{i}" for i in range(1, FANOUT + 1))
EXPERIMENT = f"""
name: lab-commit
lab:
  classes:
    commit-wt: {{iops: 5000, bps: 200M}}
    commit-wb: {{iops: 5000, bps: 200M, write_cache: write-back}}
  disks:
    - {{name: cmt, size: 512M, class: commit-wt}}
    - {{name: cmb, size: 512M, class: commit-wb}}
    - {{name: cml, count: {FANOUT}, size: 64M, class: commit-wb}}
targets:
  - {{name: wt, type: disk, device: /dev/disk/by-id/virtio-cmt, fs: xfs}}
  - {{name: wb, type: disk, device: /dev/disk/by-id/virtio-cmb, fs: xfs}}
  - {{name: lvm{FANOUT}, type: lvm, devices: [{_LV}]}}
workloads:
  - {{name: commit, tool: fio, rw: randwrite, bs: 4k, iodepth: 1, size: 8M, runtime: 1s,
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
           for t in ("wt", "wb", LVM)}
    print("flushes per sync", per)
    # Counts, not speed: one flush per sync and disk; the filesystem's own log work adds a
    # few (measured up to +1.9 % on wb); write-through disks never flush.
    assert all(f == 0 for f in per["wt"]), per
    for n in range(ROUNDS):
        within("commit lab: flushes per sync, one write-back disk", per["wb"][n],
               low=0.99, high=1.05)
        within(f"commit lab: flushes per sync over the {LVM}'s disks", per[LVM][n] / FANOUT,
               low=0.99, high=1.05)


@pytest.mark.lab
@pytest.mark.slow
def test_write_through_syncs_far_faster_and_the_verdict_says_so(commit_db: Path) -> None:
    runs = _runs(commit_db)
    ratios = paired(runs, "wb", "wt", "lat_mean")
    # Paired: each round's wb and wt runs seconds apart.
    within("commit lab: wb over wt mean sync latency, paired median",
           statistics.median(ratios), low=10, reference=f"rounds {ratios}")
    built = load(commit_db)
    rows = {v.candidate.metric: v for v in built.verdicts
            if v.target == "wb" and v.candidate.tags.get("op") == "sync"}
    print("\n".join(answer.answer_lines(built)))
    # the sync call's own p99 and mean: descriptions, each with its 95 % interval
    for metric in ("lat_p99", "lat_mean"):
        c = rows[metric].comparison
        # Paired: the interval comes from the same rounds as the ratio above.
        assert c is not None and c.verdict is Verdict.WORSE, rows[metric]
        assert c.ratio_ci is not None, rows[metric]
        within(f"commit lab: wb over wt sync {metric}, 95 % interval's low end",
               c.ratio_ci.low, low=2, reference=f"ratio {c.ratio:.3g}")
    # The headline: what a committer waits for (its write and its sync), decided "slower"
    # with its interval. The disks are capped at 5000 IOPS (the emulated CPU's limit is
    # near 10k), so the write costs the guest's CPU (~0.5 ms) and the host's flush shows
    # beside it: 2.08x [1.92, 2.25] quiet (load 1.0), 3.57x [2.37, 5.37] beside
    # `stress-ng --cpu 2` (load 3.2), 2026-11-29. Under the standard class's 500 IOPS the
    # write's 2 ms hid the flush (1.35-2.07x at load 9-11, 0.998x quiet: not decided).
    c = rows["commit_lat_mean"].comparison
    # Paired: wb and wt committed in the same rounds; a ratio, not a time.
    assert rows["commit_lat_mean"].is_verdict and c is not None, rows["commit_lat_mean"]
    assert c.verdict is Verdict.WORSE and c.ratio_ci is not None, rows["commit_lat_mean"]
    within("commit lab: wb over wt commit_lat_mean, 95 % interval's low end", c.ratio_ci.low,
           low=1.3, reference=f"ratio {c.ratio:.3g}")
    # The commits' p99 is not asserted: wt's tail is its write's (the throttle's slices
    # at the cap), which matched wb's sync tail in one boot at 500 IOPS.
    assert rows["commit_lat_p99"].is_verdict, rows["commit_lat_p99"]
    table = report.render(built, "table", ReportOptions(details=True))
    line = next(t for t in table.splitlines() if t.startswith("wb ") and " lat_mean " in t
                and " sync " in t and "secondary" in t)
    assert "secondary, not a verdict: ×" in line, line  # "×42.8 [×8.15, ×225]": ≥ 2×


@pytest.mark.lab
@pytest.mark.slow
def test_lvm_over_many_disks_waits_for_its_fanned_out_flushes(commit_db: Path) -> None:
    runs = _runs(commit_db)
    # The sync's median, not its mean: a CPU hog that preempts the VM for a few ms in one
    # slice moves that slice's mean, not its median (measured below and in the docstring).
    ratios = paired(runs, LVM, "wb", "lat_p50")
    print("mean rounds", paired(runs, LVM, "wb", "lat_mean"))
    # Paired: each round's LVM and one-disk runs seconds apart.
    within(f"commit lab: {LVM} over wb median sync latency, paired median",
           statistics.median(ratios), low=1.2, high=FANOUT / 2, reference=f"rounds {ratios}")
