"""What every fault action is: the commands it runs, journalled before they run.

An action is a small object made for one run from the fault as written and the target
as built: `apply` starts the fault, `undo` ends it. Before `apply` runs, the action's
journal entry (kind + data) is written, and the same `@undoer` function that serves
`volbench cleanup` ends it on the normal path too, so a fault never outlives its run
even when volbench is killed in the middle of one (cleanup replays the journal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.config.faults import FaultSpec
from volbench.core.errors import VolbenchError
from volbench.system import proc
from volbench.system.block.disks import DiskSource, ListedDisk
from volbench.system.host.hostinfo import inside_lab
from volbench.targets.base import TargetSpec

COMMAND_TIMEOUT = 120.0
# Kept per command in the run's annotations: enough to read an error, not a whole log.
MAX_OUTPUT_CHARS = 2000


class FaultError(VolbenchError):
    """A fault could not be applied or undone on what the run built."""


@dataclass(frozen=True)
class Command:
    """One step of an action: a process (argv), a kernel knob written (path, text), or
    a request made in this process (`call`, shown as `text`; it returns its output and
    raises FaultError when refused), e.g. the lab host asked for a QMP command."""

    argv: tuple[str, ...] = ()
    path: str = ""
    text: str = ""
    call: Callable[[], str] | None = None

    def shown(self) -> str:
        if self.call is not None:
            return self.text
        return proc.command_line(self.argv) if self.argv else f"echo {self.text} > {self.path}"


@dataclass(frozen=True)
class Done:
    """What one command did: its exit code (0 for a write) and the tail of its output."""

    command: str
    returncode: int
    output: str

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "returncode": self.returncode, "output": self.output}


def run_commands(commands: Sequence[Command], check: bool = True) -> list[Done]:
    """Run the steps in order; with `check`, a failing step raises FaultError after its
    record is kept (the error names the command and its output)."""
    done: list[Done] = []
    for command in commands:
        if command.call is not None:
            try:
                code, text = 0, command.call()[-MAX_OUTPUT_CHARS:]
            except FaultError as exc:
                code, text = 1, str(exc)
        elif command.argv:
            result = proc.run(command.argv, timeout=COMMAND_TIMEOUT, check=False)
            text = (result.stdout + result.stderr).strip()[-MAX_OUTPUT_CHARS:]
            code = -1 if result.timed_out else result.returncode
        else:
            try:
                Path(command.path).write_text(command.text)
                code, text = 0, ""
            except OSError as exc:
                code, text = exc.errno or 1, exc.strerror or str(exc)
        done.append(Done(command.shown(), code, text))
        if check and code != 0:
            raise FaultError(f"{command.shown()} failed (exit code {code}): {text[-300:]}")
    return done


@dataclass
class Action:
    """One fault on one built thing: `journal_kind`/`data` are written before `apply`
    runs; `undo_commands` (made from `data` alone) end it, on the normal path and in
    `volbench cleanup`. `phase` names the time while it is in effect."""

    name: str
    journal_kind: str
    data: dict[str, Any]
    apply_commands: Callable[[], list[Command]]
    undo_commands: Callable[[Mapping[str, Any]], list[Command]]
    # Facts recorded with the event (mount options, speed limits, replacement timeout).
    facts: dict[str, Any] = field(default_factory=dict)
    # Sampled each second while the fault or its end is in effect (md rebuild progress).
    sample: Callable[[], dict[str, Any]] | None = None
    # Settings the action changes that hold until the run ends (md's speed limits for the
    # rebuild after it): journalled with their undo data, undone by the run's teardown.
    keep: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Why this fault may lose written data ('' when it should lose nothing: a RAID1
    # member, an NFS hard mount); the verify pass after the run is judged against it.
    may_lose: str = ""


def undo_now(kind_undo: Callable[[Mapping[str, Any]], list[Command]],
             data: Mapping[str, Any]) -> None:
    """The undoer body every fault kind shares: its commands, each step checked."""
    run_commands(kind_undo(data))


def listed_disks(spec: TargetSpec) -> tuple[ListedDisk, ...]:
    """The disks a target lists itself (not the ones of targets it is built on)."""
    source = getattr(spec, "source", None)
    return source.listed if isinstance(source, DiskSource) else ()


def refuse_real_disk(fault: FaultSpec, spec: TargetSpec) -> None:
    """Refuse, when it is about to act, a fault on a listed disk outside the lab that
    does not say `wipe: true` (the file check lets the lab's disks through on the host)."""
    disk = next((d for d in listed_disks(spec) if d.path == fault.device), None)
    if disk is not None and not disk.wipe and not inside_lab():
        raise FaultError(f"{disk.path} is a real disk outside the lab; run it in the lab "
                         "(volbench lab run), or set wipe: true on that disk")
