"""Per-metric facts in one table: which direction is better, what to call it, what to chart.

Part of the result model: the reports and the runner's adaptive repetition both use it.

Every tool's metrics pass through here, so a new workload only needs an entry when
the defaults by unit are wrong. The rules, first that applies:

1. A tag ``cpu_bound`` (bonnie++'s columns limited by the CPU, not the disk) excludes the
   metric from comparisons: it says nothing about the storage layout (seed 003 drops
   them from its "% of local" table for that reason).
2. An explicit entry in ``KNOWN``.
3. A name pattern: latency percentiles (``clat_p99``) are lower-is-better details;
   extremes and spreads (``*_min``, ``*_max``, ``*_stddev``) are never compared, since one
   slow I/O decides a maximum and a spread is not a speed.
4. The unit: rates (op/s, B/s, tx/s) are higher-is-better, durations (s) lower-is-better,
   anything else (bytes, counts, %) is descriptive and not compared.

*Primary* metrics are the ones reports compare and chart by default (the rest is kept
and shown with ``--metrics all`` or by name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Metrics shown first, in this order; others follow alphabetically.
HEADLINE = (
    "iops",
    "bw",
    "lat_mean",
    "clat_p99",
    "lat_p99",
    "tps",
    "latency_avg",
    "latency_p99",
    "init_time",
    "real",
    "other",
    "mb_per_s",
    "bytes_per_s",
    "cached_read_bps",
    "disk_read_bps",
)
RATE_UNITS = ("op/s", "B/s", "tx/s")
_PERCENTILE = re.compile(r"^(lat|clat|slat|latency)_p(\d+(?:\.\d+)?)$")
_SPREAD = re.compile(r"_(min|max|stddev)$")
_FIO_DETAIL = re.compile(r"^(lat|clat|slat)_")
CPU_BOUND_TAG = "cpu_bound"


@dataclass(frozen=True)
class MetricInfo:
    label: str
    # None: descriptive (bytes moved, CPU %), never compared.
    higher_is_better: bool | None
    # Chart family the metric is drawn in ("iops", "throughput", "latency", "tps", "time").
    chart: str | None = None
    # Detail metrics are summarised and kept but not compared or charted by default.
    detail: bool = False


KNOWN: dict[str, MetricInfo] = {
    # fio
    "iops": MetricInfo("IOPS", True, "iops"),
    "bw": MetricInfo("throughput", True, "throughput"),
    "lat_mean": MetricInfo("mean latency", False, "latency"),
    "clat_mean": MetricInfo("mean completion latency", False, detail=True),
    "slat_mean": MetricInfo("mean submission latency", False, detail=True),
    "clat_p99": MetricInfo("p99 completion latency (per run)", False),
    # fio's sync calls (op=sync) have one latency, the call's: their p99 is a headline of a
    # commit-bound case (core/headline.py).
    "lat_p99": MetricInfo("p99 latency (per run)", False),
    "commit_lat_mean": MetricInfo("mean commit latency (writes + sync)", False),
    "commit_lat_p99": MetricInfo("p99 commit latency, at least (per run)", False),
    "io_bytes": MetricInfo("bytes moved", None),
    "total_ios": MetricInfo("I/Os", None),
    "runtime": MetricInfo("runtime", None),
    "cpu_usr": MetricInfo("user CPU", None),
    "cpu_sys": MetricInfo("system CPU", None),
    "disk_util": MetricInfo("disk utilisation", None),
    # The target's disks' cache flushes per fio sync call (workloads/fiosync.py): how a
    # flush fans out, not a speed.
    "flushes_per_sync": MetricInfo("device flushes per sync", None, detail=True),
    # load curves (volbench.engine.curves, report/curves.py): the rate a step was held at is a
    # setting, not a result; the curve's own figures are compared across targets.
    "offered": MetricInfo("offered rate", None),
    "saturation_iops": MetricInfo("saturation IOPS", True, "iops"),
    "knee_iops": MetricInfo("IOPS at the knee", True, "iops"),
    "sla_iops": MetricInfo("IOPS within the SLA", True, "iops"),
    "saturation_tps": MetricInfo("saturation tps", True, "tps"),
    "knee_tps": MetricInfo("tps at the knee", True, "tps"),
    "sla_tps": MetricInfo("tps within the SLA", True, "tps"),
    # pgbench
    "tps": MetricInfo("transactions/s", True, "tps"),
    "latency_avg": MetricInfo("mean latency", False, "latency"),
    "latency_p99": MetricInfo("p99 latency (per run)", False),
    # pgbench -r: the commit statement's mean latency, what a transaction waits for its WAL
    "commit_latency": MetricInfo("commit latency (pgbench -r)", False),
    "init_time": MetricInfo("init time", False, "time"),
    "failed": MetricInfo("failed transactions", None),
    # pgbench from several hosts: how far apart the hosts' load began and ended (a check
    # on the run, not a speed).
    "start_skew": MetricInfo("spread of the hosts' first transactions", None, detail=True),
    "end_skew": MetricInfo("spread of the hosts' last transactions", None, detail=True),
    # macro jobs (seed 003: "other" = real - user - sys, the time spent waiting for I/O)
    "real": MetricInfo("real time", False, "time"),
    "user": MetricInfo("user CPU time", None),
    "sys": MetricInfo("system CPU time", None),
    "other": MetricInfo("I/O time (real − user − sys)", False, "time"),
    # dd and hdparm report "bw" (B/s) like fio; hdparm tags it test=cached|disk.
    # How long a run's burst or warm-up window lasted (windows.py): what the disk did, not
    # a speed to compare.
    "burst_seconds": MetricInfo("burst length", None),
    "warmup_seconds": MetricInfo("warm-up length", None),
    # fio's steady state within a run (steady: {within: run}, workloads/fiosteady.py): what
    # the run did, judged by the report against the experiment's rule, never compared.
    "ss_attained": MetricInfo("fio found it steady (1/0)", None, detail=True),
    "ss_seconds": MetricInfo("seconds until steady (fio stopped)", None, detail=True),
    "ss_range": MetricInfo("range of fio's steady-state window", None, detail=True),
    "ss_slope": MetricInfo("best-fit excursion of fio's steady-state window", None,
                           detail=True),
    # A power cut (docs/durability.md): what survived is judged by report/durability.py
    # (cuts that lost data, with Clopper-Pearson bounds), never as a mean of counts.
    "recovered": MetricInfo("came back after the power cut (1/0)", None, detail=True),
    "acked_writes": MetricInfo("writes acknowledged before the cut", None, detail=True),
    "acked_lost": MetricInfo("acknowledged writes lost to the cut", None, detail=True),
    "torn_blocks": MetricInfo("blocks torn by the cut", None, detail=True),
    "commits_acked": MetricInfo("commits acknowledged before the cut", None, detail=True),
    "commits_lost": MetricInfo("acknowledged commits lost to the cut", None, detail=True),
    "fsck_problems": MetricInfo("filesystem checks with findings after the cut", None,
                                detail=True),
}


def info(name: str, unit: str) -> MetricInfo:
    """Facts about a metric (see the module docstring for the rules)."""
    known = KNOWN.get(name)
    if known is not None:
        return known
    m = _PERCENTILE.match(name)
    if m:
        kind = {
            "lat": "latency",
            "clat": "completion latency",
            "slat": "submission latency",
            "latency": "latency",
        }[m.group(1)]
        return MetricInfo(f"p{m.group(2)} {kind} (per run)", False, detail=True)
    if _SPREAD.search(name):
        return MetricInfo(name.replace("_", " "), None, detail=True)
    if _FIO_DETAIL.match(name):
        return MetricInfo(name.replace("_", " "), _by_unit(unit), detail=True)
    return MetricInfo(name.replace("_", " "), _by_unit(unit))


def _by_unit(unit: str) -> bool | None:
    if unit in RATE_UNITS or (unit.endswith("/s") and unit != "s"):
        return True
    if unit == "s":
        return False
    return None


def cpu_bound(tags: Mapping[str, str]) -> bool:
    value = str(tags.get(CPU_BOUND_TAG, "")).strip().lower()
    return value not in ("", "0", "false", "no")


def comparable(name: str, unit: str, tags: Mapping[str, str]) -> bool:
    return info(name, unit).higher_is_better is not None and not cpu_bound(tags)


def label(name: str, unit: str = "") -> str:
    return info(name, unit).label


# Labels of a metric of one operation that reads better said whole (op=sync: fio's
# fsync/fdatasync calls, workloads/fiosync.py).
OP_LABELS = {
    ("sync", "iops"): "syncs/s",
    ("sync", "total_ios"): "sync calls",
    ("sync", "lat_mean"): "mean sync latency",
    ("sync", "lat_p99"): "p99 sync latency (per run)",
    ("sync", "commit_lat_mean"): "mean commit latency (writes + sync)",
    ("sync", "commit_lat_p99"): "p99 commit latency, at least (per run)",
}


def op_label(name: str, unit: str, op: str) -> str:
    """A metric's label with its operation: "read IOPS", "syncs/s"."""
    own = OP_LABELS.get((op, name))
    return own if own else " ".join(p for p in (op, label(name, unit)) if p)


def selected(name: str, unit: str, wanted: Sequence[str] | None) -> bool:
    """Is this metric in the user's selection (None: primary metrics; ("all",): all)?"""
    if wanted is None:
        return is_primary(name, unit)
    return "all" in wanted or name in wanted


def is_primary(name: str, unit: str) -> bool:
    """Compared and charted by default: headline metrics and non-detail metrics with a
    direction (rates and times of tools this table does not list)."""
    if name in HEADLINE:
        return True
    facts = info(name, unit)
    return facts.higher_is_better is not None and not facts.detail


def rank(name: str) -> tuple[int, str]:
    """Sort key: headline order first, then by name."""
    try:
        return HEADLINE.index(name), name
    except ValueError:
        return len(HEADLINE), name
