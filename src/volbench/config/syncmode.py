"""The `sync:` field of write workloads, declared once (fio and dd; bonnie++ has its own
narrower one): the modes of core/syncmode.py as an axis of the matrix."""

from __future__ import annotations

from volbench.config.spec import SyncAxis
from volbench.core import syncmode

SYNC: SyncAxis[str] = SyncAxis(
    syncmode.PARAM, syncmode.NONE, convert=syncmode.convert, expected=syncmode.EXPECTED,
    help="how writes are made durable: O_DSYNC, O_SYNC, or a call every N writes",
    words=syncmode.WORDS, calls=syncmode.CALLS, most=syncmode.MAX_EVERY)
