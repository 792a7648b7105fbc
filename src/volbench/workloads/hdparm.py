"""hdparm -tT: cached reads and device reads of the target's block device (read-only).

`-T` times reads from the buffer cache (memory and CPU, not the disk: seed 003's
"cached reads" are the same on every layout); `-t` times sequential reads from
the device through the buffer cache, or with O_DIRECT (`--direct`). hdparm's
"MB" is MiB (it reads in 2 MiB chunks and counts them), so rates become B/s
with a factor of 2**20.

Only `Built.block_device` is ever timed: never a target's backing devices, which
for a directory target may be the root disk. A device that cannot be opened
makes hdparm exit non-zero; the run is recorded as failed with hdparm's message
(`/dev/vda: Operation not permitted` on this project's machines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader, flag
from volbench.config.spec import Axis
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Metric, Params, Parsed, Scalar
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec

MIB = 1024**2
# hdparm's two timings take ~2-3 s each (it reads for at least 2 s or the whole device).
SECONDS_PER_TIMING = 3.0
_TIMING = re.compile(
    r"Timing (?P<direct>O_DIRECT )?(?P<what>cached reads|buffered disk reads|disk reads):\s*"
    r"(?P<mb>\d+(?:\.\d+)?) MB in\s+(?P<s>\d+(?:\.\d+)?) seconds =\s*"
    r"(?P<rate>\d+(?:\.\d+)?) (?P<unit>[kMG])B/sec"
)
_UNIT = {"k": 1024.0, "M": float(MIB), "G": float(1024**3)}


@dataclass(frozen=True)
class HdparmSpec(WorkloadSpec):
    """An hdparm workload as the experiment file gives it: the fields, read and checked."""

    pass


FIELDS: tuple[Axis[Any], ...] = (
    Axis("direct", False, convert=flag, expected="true or false",
         help="O_DIRECT reads (hdparm --direct)"),
    Axis("cached", True, convert=flag, expected="true or false",
         help="also the cached read rate (-T)"),
)


def parse(r: Reader, name: str) -> HdparmSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    matrix: dict[str, tuple[Scalar, ...]] = {f.name: r.get(f) for f in FIELDS}
    r.finish()
    return HdparmSpec(name, "hdparm", matrix)


def cases(spec: HdparmSpec) -> list[dict[str, Scalar]]:
    """Every combination of the matrix's values, in the order the user wrote them."""
    return spec.cases()


def command(spec: HdparmSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    device = ctx.built.block_device
    if device is None:
        raise VolbenchError(
            f"hdparm needs a block device, and target {ctx.built.name} has "
            "none (a directory target); use a loopdisk or another target "
            "that presents a device"
        )
    argv = ["hdparm", "-tT" if params["cached"] else "-t"]
    if params["direct"]:
        argv.append("--direct")
    argv.append(device)
    return Invocation(tuple(argv), timeout=120.0)


def estimate(spec: HdparmSpec, params: Params) -> float:
    """Expected seconds of one run of these params, for `volbench plan` and the progress ETA;
    reads nothing from the machine."""
    return SECONDS_PER_TIMING * (2 if params["cached"] else 1)


def parse_text(text: str, source: str = "hdparm output") -> Parsed:
    """One `bw` metric per timing line, tagged test=cached|disk (direct is a parameter)."""
    metrics: list[Metric] = []
    for m in _TIMING.finditer(text):
        test = "cached" if m.group("what") == "cached reads" else "disk"
        tags = {"test": test}
        rate = float(m.group("rate")) * _UNIT[m.group("unit")]
        metrics.append(Metric("bw", rate, "B/s", tags))
        # hdparm reads for a fixed ~2-3 s: the seconds are not a result, the rate is.
        metrics.append(Metric("bytes", float(m.group("mb")) * MIB, "B", tags))
    if not metrics:
        raise ParseError(
            "hdparm",
            source,
            "no 'Timing … reads: N MB in S seconds = R MB/sec' "
            "line (did hdparm stop early? see its stderr)",
        )
    return Parsed(tuple(metrics))


def params_of(text: str) -> dict[str, Scalar]:
    """direct and cached as hdparm workloads name them, read back from the timing labels."""
    found = list(_TIMING.finditer(text))
    if not found:
        return {}
    return {
        "direct": any(m.group("direct") for m in found),
        "cached": any(m.group("what") == "cached reads" for m in found),
    }


def parse_output(spec: HdparmSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    return parse_text(run.outputs.get("stdout", ""), "hdparm stdout")


KIND = WorkloadKind(
    "hdparm",
    "hdparm -tT on the target's block device: cached and device read rates",
    parse,
    cases,
    command,
    parse_output,
    estimate,
    tools=("hdparm",),
    fields=FIELDS,
)
