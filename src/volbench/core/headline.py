"""One headline metric per workload kind: the figure a reader looks at first.

IOPS and bandwidth of one fio job are one comparison shown twice, and mean latency a
third time. The headline is, per case (target × workload × parameters):

* fio: IOPS for random I/O (rw = randread, randwrite, randrw), bandwidth otherwise;
* dd, hdparm (sequential by nature): bandwidth;
* pgbench: tps (init-only runs: the init time);
* real-world jobs (command, smallfiles): real and other time (for smallfiles the
  phase=total figures).

A case with none of these (bonnie++'s many columns) keeps every primary metric. The
report shows the headline verdicts first and the rest below; adaptive repetition waits
for the headline comparisons only, unless `repeat.metrics` names others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

JOB_TIMES = ("real", "other")


def _random(params: Mapping[str, object]) -> bool:
    return "rand" in str(params.get("rw", ""))


def headline(name: str, tags: Mapping[str, str], params: Mapping[str, object]) -> bool:
    """Is this metric of a case with these parameters its workload's headline?"""
    if tags.get("phase", "total") != "total":
        return False
    if name == "iops":
        return _random(params)
    if name == "bw":
        return not _random(params)
    return name in ("tps", "init_time", *JOB_TIMES)


def has_headline(metrics: Iterable[tuple[str, Mapping[str, str]]],
                 params: Mapping[str, object]) -> bool:
    """Does a case measuring these (name, tags) have a headline at all?"""
    return any(headline(name, tags, params) for name, tags in metrics)
