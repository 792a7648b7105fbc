"""One headline metric per workload kind: the figure a reader looks at first.

IOPS and bandwidth of one fio job are one comparison shown twice, and mean latency a
third time. The headline is, per case (target × workload × parameters):

* fio: IOPS for random I/O (rw = randread, randwrite, randrw), bandwidth otherwise;
* dd, hdparm (sequential by nature): bandwidth;
* pgbench: tps (init-only runs: the init time);
* real-world jobs (command, smallfiles): real and other time (for smallfiles the
  phase=total figures).

A commit-bound case (one with a `sync:` mode, core/syncmode.py) is judged on what a
committer waits for, not on its write rate:

* a sync call every N writes (fsync, fdatasync): the mean commit latency (the N writes
  and the sync: `commit_lat_mean`), the commits' p99 as far as fio's output tells it (at
  least the larger of the write's and the sync's p99: `commit_lat_p99`) and syncs per
  second (`iops`), all tagged op=sync (fio's `sync` section), lower or higher is better
  as it should be; the write IOPS and bandwidth are shown beside them, not judged, and
  the sync call's own mean and p99 (`lat_mean`, `lat_p99`) are descriptions. Why the
  commit's and not the sync call's: where writes are already stable (NFS from a `sync`
  export) the fdatasync has nothing left to do, and its own latency would call the
  slowest committer the fastest (workloads/fiosync.py);
* O_DSYNC / O_SYNC writes: each write is a commit, so the write's p99 and mean latency
  (`clat_p99`, `lat_mean`) and its IOPS (commits per second).

Sync figures found without a mode in the parameters (a job file with fsync=1) are
headlines too: a sync measured is what a reader looks at.

A case with none of these (bonnie++'s many columns) keeps every primary metric. The
report shows the headline verdicts first and the rest below; adaptive repetition waits
for the headline comparisons only, unless `repeat.metrics` names others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from volbench.core import syncmode

JOB_TIMES = ("real", "other")
# What a committer waits for: the sync calls' (op=sync), or O_DSYNC writes' (op=write).
SYNC_HEADLINES = ("commit_lat_mean", "commit_lat_p99", "iops")
DSYNC_HEADLINES = ("clat_p99", "lat_mean", "iops")


def _random(params: Mapping[str, object]) -> bool:
    return "rand" in str(params.get("rw", ""))


def headline(name: str, tags: Mapping[str, str], params: Mapping[str, object]) -> bool:
    """Is this metric of a case with these parameters its workload's headline?"""
    if tags.get("phase", "total") != "total":
        return False
    op = tags.get("op")
    if op == "sync":
        return name in SYNC_HEADLINES
    mode = syncmode.of(params)
    if op is not None and mode.syncs:
        return op == "write" and mode.kind in syncmode.FLAGS and name in DSYNC_HEADLINES
    if name == "iops":
        return _random(params)
    if name == "bw":
        return not _random(params)
    return name in ("tps", "init_time", *JOB_TIMES)


def commit_rank(name: str, tags: Mapping[str, str]) -> int | None:
    """Where a commit-bound headline stands among its case's (mean and p99 commit latency,
    rate), None for others (they keep the report's metric order)."""
    heads = SYNC_HEADLINES if tags.get("op") == "sync" else None
    return heads.index(name) if heads and name in heads else None


def has_headline(metrics: Iterable[tuple[str, Mapping[str, str]]],
                 params: Mapping[str, object]) -> bool:
    """Does a case measuring these (name, tags) have a headline at all?"""
    return any(headline(name, tags, params) for name, tags in metrics)
