"""Stalled seconds in one run's per-second series: set aside before any level is judged.

A stall is not a regime: a second that completed next to nothing (an outage of any length)
or a short dip well under its neighbourhood's level (a hiccup, a slow first or last
second) says nothing about the level a disk holds. stats.changepoint sets these seconds
aside before it looks for bursts and warm-ups, and reports them; stats.series.stalls is
the report's own account of outages.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

# Stalls: seconds below STALL_LEVEL of the run's median, or a dip below DIP_LEVEL of it for
# at most MAX_DIP seconds. They are set aside, never a level (a longer slow stretch is one).
STALL_LEVEL = 0.10
DIP_LEVEL = 0.50
# A slow stretch's length is counted over the seconds below this factor of DIP_LEVEL.
DIP_MARGIN = 1.2
# In a long slow stretch, a second below this share of the run's level completed next to
# nothing: a stall (an outage) whatever the stretch's own level.
NOTHING_LEVEL = 0.01
MAX_DIP = 5
# A second's neighbourhood for the stall levels: this many seconds either side.
LOCAL = 15


def stall_spans(values: Sequence[float]) -> list[tuple[int, int]]:
    """Stalled seconds as [start, end) spans, each second judged against its neighbourhood
    (the median of the LOCAL seconds either side, so a stall inside a burst is one too,
    or the run's median where that is higher):
    below STALL_LEVEL of it (any length: nothing completed, an outage), or below DIP_LEVEL
    of it for at most MAX_DIP seconds in a row (a short dip: a run's start or end, a
    hiccup)."""
    n = len(values)
    # An outage longer than LOCAL would pull its own neighbourhood down: the run's median
    # is the least a second is judged against.
    whole = statistics.median(values)
    local = [max(whole, statistics.median(values[max(0, i - LOCAL) : i + LOCAL + 1]))
             for i in range(n)]
    out: list[tuple[int, int]] = []
    i = done = 0
    while i < n:
        if not values[i] < DIP_LEVEL * local[i]:
            i += 1
            continue
        # How long the slow stretch is, counted with a margin (DIP_MARGIN): a level near half
        # the run's (the sustained level of a 2x burst that fills most of the run) has its
        # seconds either side of DIP_LEVEL, and cut at it into short "dips" it was set aside
        # as stalls (issue 32: a 2x burst of 20 s in 30 s was then missed).
        start, end = i, i
        while start > done and values[start - 1] < DIP_MARGIN * DIP_LEVEL * local[start - 1]:
            start -= 1
        while end < n and values[end] < DIP_MARGIN * DIP_LEVEL * local[end]:
            end += 1
        if end - start <= MAX_DIP:
            j = i
            while j < n and values[j] < DIP_LEVEL * local[j]:
                j += 1
            out.append((i, j))
        else:  # a long slow stretch is a regime; only its stalls are stalls
            out.extend(_below(values, local, start, end))
            j = end
        i = done = j
    return out


def _below(values: Sequence[float], local: Sequence[float], start: int,
           end: int) -> list[tuple[int, int]]:
    """The stalled seconds of a long slow stretch. A stretch whose own median is near
    zero is an outage (with a trickle of late completions): its seconds under
    STALL_LEVEL of the run's level are stalls. A stretch with a level of its own is a
    regime (a warm-up, a degraded phase): only seconds near zero against that level, or
    next to nothing against the run's, are stalls, and dips under half that level of up
    to MAX_DIP seconds (a stall inside the sustained level of a 2x burst that fills most
    of the run, issue 32). Judged against the run's level alone,
    the first seconds of a steep warm-up (a fresh thin volume in the lab: 136, 143, 167,
    199 IOPS, then up to 2,048) were stalls and the warm-up was cut short."""
    own = statistics.median(values[start:end])
    outage = all(own < STALL_LEVEL * local[k] for k in range(start, end))

    def stalled(k: int) -> bool:
        if outage:
            return values[k] < STALL_LEVEL * local[k]
        return values[k] < max(STALL_LEVEL * own, NOTHING_LEVEL * local[k])

    def dipped(k: int) -> bool:
        return not outage and values[k] < DIP_LEVEL * own

    out: list[tuple[int, int]] = []
    i = start
    while i < end:
        j = i
        while j < end and stalled(j):
            j += 1
        if j == i:  # a short dip under half the stretch's own level is a stall in it too
            while j < end and dipped(j):
                j += 1
            if j - i > MAX_DIP or not any(dipped(k) for k in range(i, j)):
                j = i
        if j > i:
            out.append((i, j))
        i = max(j, i + 1)
    return out
