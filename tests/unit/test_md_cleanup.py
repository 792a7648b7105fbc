"""`volbench cleanup` after a kill during an md member fault: the member goes back, udev
is waited for, and an array udev assembles from a member as the array stops is stopped
too before the members are zeroed (seen in the lab's kill trials)."""

from __future__ import annotations

from typing import Any

import pytest

from volbench.faults import md
from volbench.faults.base import Command
from volbench.targets import mdraid


def test_cleanup_puts_the_member_back_then_waits_for_udev(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(md, "_undo_commands", lambda data: [
        Command(("mdadm", "--add", "/dev/md127", "/dev/vdb"))])
    monkeypatch.setattr(md.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert md._cleanup_commands({}) == [
        Command(("mdadm", "--add", "/dev/md127", "/dev/vdb")),
        Command(("udevadm", "settle", "--timeout=30"))]
    monkeypatch.setattr(md, "_undo_commands", lambda data: [])  # the member is in
    assert md._cleanup_commands({}) == []


def test_an_array_udev_assembles_as_ours_stops_is_stopped_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Ours stops; udev assembles md127 from the member mdadm had just written; then none.
    found = [["/dev/md126"], ["/dev/md127"], []]
    ran: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> None:
        ran.append(list(argv))

    monkeypatch.setattr(mdraid, "_arrays_of", lambda name, members: found.pop(0))
    monkeypatch.setattr(mdraid.blockstack, "current_member", lambda m: m["device"])
    monkeypatch.setattr(mdraid.guard, "read_signatures", lambda node: ([], None))
    monkeypatch.setattr(mdraid.proc, "run", run)
    monkeypatch.setattr(mdraid.shutil, "which", lambda name: f"/usr/bin/{name}")
    mdraid._undo_array({"name": "vb_r1", "members": [{"device": "/dev/vdb"}]})
    assert ran == [["mdadm", "--stop", "/dev/md126"], ["udevadm", "settle", "--timeout=30"],
                   ["mdadm", "--stop", "/dev/md127"], ["udevadm", "settle", "--timeout=30"]]
