"""The verify pass around a faulted fio run: the data file rewritten with checksummed
blocks before the run, every block read back and checked after it (workloads/fioverify.py
says why it is done in three steps). The verdict is judged against what the run's faults
may lose: a RAID1 member or an NFS hard-mount outage should lose nothing; RAID0 or a soft
mount may, and the report says which was expected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from volbench.core.model import Params, Parsed
from volbench.system import proc
from volbench.workloads import fioverify
from volbench.workloads.base import Invocation, RunContext, WorkloadSpec

# Shown in the annotations: enough of the verify job's console to read its first errors.
MAX_CONSOLE_CHARS = 2000


@dataclass(frozen=True)
class VerifyPass:
    """The verify pass of one faulted run: `prepare` before it, `check` after it."""

    filename: str
    params: Params
    ctx: RunContext

    @staticmethod
    def for_run(workload: WorkloadSpec, params: Params, ctx: RunContext
                ) -> VerifyPass | str:
        """The pass for this run, or why there is none (another tool, a job file, a
        multi-host target, a block size range)."""
        if workload.tool != "fio":
            return f"no verify pass for {workload.tool} (fio only)"
        why = fioverify.unsupported(getattr(workload, "jobfile", None) is not None, params, ctx)
        if why:
            return why
        from volbench.workloads import fio  # only a fio run has one: others never load fio

        return VerifyPass(fio.data_file(params, ctx.built), params, ctx)

    def prepare(self, tracker: proc.ProcessTracker | None) -> str:
        """Rewrite the data file with a checksum in every block (untimed); '' when done,
        else the error (the run then goes on without a verify pass)."""
        done = _run(fioverify.layout(self.filename, self.params, self.ctx), tracker)
        if done.returncode != 0 or done.timed_out:
            return (f"the verify layout failed (exit code {done.returncode}): "
                    f"{(done.stderr or done.stdout).strip()[-300:]}")
        return ""

    def measured(self, inv: Invocation) -> Invocation:
        """The measured run's invocation with its writes carrying checksums."""
        return replace(inv, argv=(*inv.argv, *fioverify.measured_options(self.params)))

    def check(self, parsed: Parsed, events: Sequence[Mapping[str, Any]],
              tracker: proc.ProcessTracker | None) -> tuple[Parsed, dict[str, Any]]:
        """Read every block back (untimed): `parsed` with verify_errors and
        verify_checked_bytes added, and what the annotations keep."""
        inv = fioverify.command(self.filename, self.params, self.ctx)
        done = _run(inv, tracker)
        text = ""
        if (path := inv.outputs.get(fioverify.OUTPUT)) is not None and path.exists():
            text = path.read_text(errors="replace")
        console = done.stdout + done.stderr
        found = fioverify.parse(text, console, fioverify.expected_bytes(self.params),
                                -1 if done.timed_out else done.returncode)
        expected = expected_loss(events)
        metrics = fioverify.metrics(found, expected)
        note = {"verdict": found.words(), "nothing_lost": found.nothing_lost,
                "expected": expected or "nothing lost",
                "command": proc.command_line(inv.argv), "bad_blocks": list(found.bad[:20]),
                "console": console.strip()[-MAX_CONSOLE_CHARS:]}
        return replace(parsed, metrics=parsed.metrics + tuple(metrics)), note


def expected_loss(events: Sequence[Mapping[str, Any]]) -> str:
    """Why the run's faults may have lost data ('' when none should have): the reasons of
    the faults that took effect (a refused one, like md's EBUSY for RAID0, lost nothing)."""
    reasons = [str(e["may_lose"]) for e in events if e.get("may_lose") and not e.get("error")]
    return "; ".join(dict.fromkeys(reasons))


def _run(inv: Invocation, tracker: proc.ProcessTracker | None) -> proc.Completed:
    for path in inv.outputs.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    return proc.run(inv.argv, timeout=inv.timeout, cwd=inv.cwd, env=inv.env, check=False,
                    tracker=tracker)
