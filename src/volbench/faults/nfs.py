"""NFS server faults: `stop` / `start` as a server crash or restart looks to its clients.

    stop:  rpc.nfsd 0                 (nfsd threads to 0: its sockets close; the export,
                                       mountd and statd stay, as after a crash of nfsd)
    start: rpc.nfsd -G 10 THREADS     (as volbench started it: 10 s NFSv4 grace period)

Only a server volbench started is stopped (one already running is someone else's). The
server is this kernel's one nfsd: every NFS target of the experiment sees the outage.
The client's mount options (hard/soft, timeo, retrans) are recorded with the event.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.faults.base import Action, Command, FaultError, undo_now
from volbench.system.journal import first_in_cleanup, undoer
from volbench.targets.base import Built

THREADS = Path("/proc/fs/nfsd/threads")
GRACE_S = 10


def _threads() -> int:
    try:
        return int(THREADS.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _undo_commands(data: Mapping[str, Any]) -> list[Command]:
    """Start nfsd again with the threads it had, unless it already runs."""
    if _threads() > 0:
        return []
    return [Command(("rpc.nfsd", "-G", str(GRACE_S), str(int(data["threads"]))))]


# Also before a dead run's processes are ended (`volbench cleanup`): an fio writing to a
# hard mount waits for the server and ends only once nfsd is back (seen in the lab's
# kill trials: the cgroup's processes did not end within 30 s while nfsd was down).
@first_in_cleanup("fault-nfsd")
@undoer("fault-nfsd")
def _undo(data: Mapping[str, Any]) -> None:
    undo_now(_undo_commands, data)


def stop(fault: FaultSpec, built: Built, peers: Mapping[str, Built]) -> Action:
    """nfsd threads to 0; undone by starting as many as before. The server must be one
    volbench started for this experiment: for this target, or for another NFS target
    built before it (which then found it "already running")."""
    ours = [b.info.get("server", {}) for b in (built, *peers.values()) if b.type == "nfs"
            and b.info.get("server", {}).get("server") == "started by volbench"]
    server = ours[0] if ours else built.info.get("server", {})
    if not ours:
        raise FaultError(f"the NFS server of target {built.name} was running before volbench "
                         "(it is not the experiment's to stop); stop that server first so "
                         "volbench starts its own")
    threads = int(server.get("threads") or _threads() or 8)
    mount = built.info.get("mount", {})
    return Action("stop", "fault-nfsd", {"threads": threads},
                  lambda: [Command(("rpc.nfsd", "0"))], _undo_commands,
                  facts={"mount_options": mount.get("options"),
                         "version": built.info.get("version"), "threads": threads},
                  may_lose=may_lose(mount.get("options")))


def may_lose(options: Any) -> str:
    """Why an outage may cost writes with these client mount options ('' for a hard
    mount, NFS's default: its writes wait for the server)."""
    words = str(options or "").replace(",", " ").split() if not isinstance(options, list) \
        else [str(o) for o in options]
    if "soft" in words or "softerr" in words:
        return "a soft mount fails writes the server does not answer within timeo x retrans"
    return ""
