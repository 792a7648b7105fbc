"""Phases of a run split at fault events, and what the per-second series say about each.

A per-second point (t, v) covers the second (t-1, t]: fio logs, once a second, the
I/Os completed in the second ending at t. A second with no point had no completions
(fio writes no line for it), so every rate here is *I/Os in the phase / phase length*
with missing seconds counting as zero, and a stall is the longest stretch no second
with completions covers. Rates and latencies use the phase's whole seconds: the second
a fault starts in holds I/Os of both phases in one number. Both are right whether a
series builder filled the gaps with zeros or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Point = tuple[float, float]
# Seconds in a row that must be back at the level before a fault counts as recovered:
# one second at the level could be a burst of queued I/O completing at once.
RECOVERY_HOLD_S = 3
RECOVERY_WITHIN = 0.10


@dataclass(frozen=True)
class Phase:
    """A stretch of a run [start, end) in seconds from its start, named for what held."""

    name: str
    start: float
    end: float

    @property
    def length(self) -> float:
        """Seconds the phase lasts (never negative: a phase ends at or after its start)."""
        return self.end - self.start


def split(events: Iterable[tuple[float, str]], end: float) -> list[Phase]:
    """Phases from (time, name of the phase it starts) events: `before` until the first,
    each event's name until the next; events at or past `end` are left out. The phases
    cover [0, end) exactly, in order, none empty."""
    cuts = sorted((max(0.0, t), name) for t, name in events if t < end)
    out: list[Phase] = []
    start, name = 0.0, "before"
    for t, next_name in cuts:
        if t > start:
            out.append(Phase(name, start, t))
            start = t
        name = next_name
    if end > start:
        out.append(Phase(name, start, end))
    return out


def cuts(events: Iterable[Mapping[str, Any]], offset: float = 0.0) -> list[tuple[float, str]]:
    """(time done on the tool's clock, phase it opens) of the fault events that took
    effect during the run (`done_s`, `phase`, `error` as the engine records them);
    `offset`: how much later than the process the tool's clock starts."""
    return [(float(e["done_s"]) - offset, str(e["phase"])) for e in events
            if not e.get("error") and e.get("phase") != "teardown"]


def _overlap(t: float, start: float, end: float) -> float:
    """How much of the second (t-1, t] lies in [start, end)."""
    return max(0.0, min(t, end) - max(t - 1.0, start))


def completed(points: Sequence[Point], start: float, end: float) -> float:
    """I/Os (or bytes, for a bandwidth series) completed in [start, end): each second's
    value counted for the part of it inside."""
    return sum(v * _overlap(t, start, end) for t, v in points)


def whole_seconds(start: float, end: float) -> tuple[float, float]:
    """The whole logged seconds inside [start, end), when there is one: a second that a
    fault starts or ends in mixes both phases (blk-throttle and md change rate at once,
    the log line does not say when), so it is left out; else the stretch itself."""
    first, last = math.ceil(start), math.floor(end)
    return (float(first), float(last)) if last > first else (start, end)


def rate(points: Sequence[Point], start: float, end: float) -> float | None:
    """Mean rate over the whole seconds in [start, end): completions / their length
    (seconds without a log line count as zero); None for an empty stretch."""
    start, end = whole_seconds(start, end)
    if end <= start:
        return None
    return completed(points, start, end) / (end - start)


def weighted_mean(values: Sequence[Point], weights: Sequence[Point], start: float,
                  end: float) -> float | None:
    """Mean of per-second values (latency) weighted by the same seconds' I/Os; None when
    no I/O completed in the stretch."""
    start, end = whole_seconds(start, end)
    w = dict(weights)
    total = weight = 0.0
    for t, v in values:
        share = w.get(t, 0.0) * _overlap(t, start, end)
        total += v * share
        weight += share
    return total / weight if weight > 0 else None


def longest_stall(points: Sequence[Point], start: float, end: float) -> float:
    """Longest stretch inside [start, end) that no second with completions covers."""
    busy = sorted(t for t, v in points if v > 0 and t > start and t - 1.0 < end)
    longest, edge = 0.0, start
    for t in busy:
        longest = max(longest, (t - 1.0) - edge)
        edge = max(edge, t)
    return max(longest, end - edge, 0.0)


def recovery(points: Sequence[Point], level: float, since: float, end: float,
             within: float = RECOVERY_WITHIN, hold: int = RECOVERY_HOLD_S) -> float | None:
    """Seconds from `since` (a fault's end) to the start of the first `hold` whole seconds
    in a row at or above (1 - within) x `level`; None: not recovered before `end`."""
    if level <= 0:
        return 0.0
    by_second = {round(t): v for t, v in points}
    floor = (1.0 - within) * level
    first = int(since) + 1 if since > int(since) else int(since)  # first whole second after
    run_start = None
    t = first + 1  # the second (t-1, t]
    while t <= end:
        if by_second.get(t, 0.0) >= floor:
            run_start = t - 1 if run_start is None else run_start
            if t - run_start >= hold:
                return max(0.0, run_start - since)
        else:
            run_start = None
        t += 1
    return None


def rebuild_expected(member_bytes: float, limits: Iterable[float | None]) -> float | None:
    """Seconds a rebuild of the whole member takes at the lowest of `limits` (B/s; None
    means no such limit): size ÷ min(the disks' byte cap, md's speed_limit_max). None
    without a size or any limit."""
    known = [float(v) for v in limits if v is not None and v > 0]
    if member_bytes <= 0 or not known:
        return None
    return member_bytes / min(known)


def progress_rate(points: Sequence[Point]) -> float | None:
    """Rate from (time, amount done) samples: the amount done between the first sample
    and the last over the time between them; None with less than a second between."""
    if len(points) < 2 or points[-1][0] - points[0][0] < 1.0:
        return None
    (t0, v0), (t1, v1) = points[0], points[-1]
    return (v1 - v0) / (t1 - t0)


def progress_span(points: Sequence[Point], total: float, earliest: float, latest: float
                  ) -> float | None:
    """How long a task lasted, from (time, amount done) samples taken while it ran: its
    start and end extrapolated from the first and the last sample at the mean rate
    between them, kept within [earliest, latest] (when it is known to have started at
    the earliest and to have ended by the latest). None without a rate to go by."""
    rate = progress_rate(points)
    if rate is None or rate <= 0:
        return None
    (t0, v0), (t1, v1) = points[0], points[-1]
    start = max(earliest, t0 - v0 / rate)
    end = min(latest, t1 + max(0.0, total - v1) / rate)
    return max(0.0, end - start)
