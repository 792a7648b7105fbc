"""One line of a doctor report: a thing this machine has or lacks, and what it disables.

Here (below cli and lab) so that `volbench doctor` and `volbench lab doctor` share it
without the lab importing the command line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """A named check; when not ok, `disables` says what cannot work without it."""

    name: str
    ok: bool
    detail: str
    # What does not work without it (empty when ok).
    disables: str = ""
