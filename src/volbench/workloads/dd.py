"""dd: sequential write and read of bs × count bytes, with direct I/O by default (seed 004).

On a target with a filesystem dd works on a file there; on a raw block-device
target (no filesystem: `Built.path` is None) on the device itself, from offset 0.

Writes and reads of one size share one data file (or the device's first bytes),
written once by an untimed setup step, so reads hit real blocks and writes are
*rewrites* of allocated blocks (`conv=notrunc`: without it dd truncates the
file first and every write allocates afresh). `file: fresh` writes a new file
in every run instead (removed after the run): *first writes*, the case seed 004
found twice as slow on thin volumes.

Without direct I/O, writes end with `conv=fdatasync` so the time includes
getting the data to the disk, not only into the page cache.

`sync:` (core/syncmode.py; only an axis when given, and only for writes): `dsync` and
`sync` open the output with O_DSYNC / O_SYNC (`oflag=dsync`, every block durable before
the next); `{fdatasync: N}` / `{fsync: N}` are dd's `conv=fdatasync` / `conv=fsync`, one
call after the last block, so N must be at least `count` (a sync every N writes, and dd
writes no more than count): a sync after every block is `dsync`, or fio's fdatasync.

The rate is bytes / seconds from dd's summary line on stderr, which is exact;
dd's own rate is rounded to 2-3 digits in decimal units (kB/MB/GB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader, choice, flag, whole
from volbench.config.spec import SIZE, Axis, Field
from volbench.config.syncmode import SYNC
from volbench.core import syncmode, units
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Metric, Params, Parsed, Scalar, Series
from volbench.targets.base import Built
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec

OPS = ("write", "read")
FILES = ("reuse", "fresh")
# Slowest rate timeouts allow for (a throttled "standard" disk may do ~5 MiB/s).
SLOWEST_BPS = 2 * 1024**2
# coreutils 8.x/9.x: "N bytes (1.0 GB, 954 MiB) copied, 15.9 s, 65.9 MB/s"; 9.x drops the
# parenthesis below 1000 bytes and says "byte" for 1; coreutils 6.x wrote "seconds".
_SUMMARY = re.compile(
    r"(?P<bytes>\d+) bytes? (?:\([^)]*\) )?copied, (?P<s>\d+(?:\.\d+)?(?:e[-+]?\d+)?) "
    r"s(?:econds)?, (?P<rate>[\d.]+|[Ii]nfinity) (?P<unit>[kMGTPE]?B)/s"
)
_RECORDS = re.compile(r"(?P<full>\d+)\+(?P<partial>\d+) records (?P<dir>in|out)")
_OPERAND = re.compile(r"\b(?P<key>if|of|bs|count|iflag|oflag)=(?P<value>\S+)")
_RATE_UNIT = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "EB": 1e18}


@dataclass(frozen=True)
class DdSpec(WorkloadSpec):
    """A dd workload as the experiment file gives it: the fields, read and checked."""

    pass


def _bs(value: Any) -> str:
    size = units.parse_size(value)
    if size < 512 or size % 512:
        raise ValueError(
            f"expected a block size of whole 512-byte sectors (direct I/O needs "
            f"them), got {value!r}"
        )
    return units.format_size(size)


AXES: tuple[Axis[Any], ...] = (
    Axis("op", ["write", "read"], convert=choice(OPS), expected="write or read",
         help="write (if=/dev/zero) and/or read (of=/dev/null)"),
    Axis("bs", "1M", convert=_bs, expected="a block size such as 1M", value=SIZE,
         help="block size, whole 512-byte sectors"),
    Axis("count", 256, convert=whole(1, "a whole number of blocks"),
         expected="a number of blocks", help="blocks per run"),
    Axis("direct", True, convert=flag, expected="true or false",
         help="oflag=direct / iflag=direct"),
    Axis("file", "reuse", convert=choice(FILES), expected="reuse or fresh",
         help="rewrite the laid-out file, or write a fresh one each run"),
)
FIELDS: tuple[Field[Any], ...] = (*AXES, SYNC)


def parse(r: Reader, name: str) -> DdSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    matrix: dict[str, tuple[Scalar, ...]] = {f.name: r.get(f) for f in AXES}
    if "fresh" in matrix["file"] and "write" not in matrix["op"]:
        r.problem(
            "file",
            "fresh files only apply to writes (reads use the laid-out file)",
            "add write to op, or remove file: fresh",
        )
    if r.has("sync"):
        matrix["sync"] = r.get(SYNC)
        _check_sync(r, matrix)
    r.finish()
    return DdSpec(name, "dd", matrix)


def _check_sync(r: Reader, matrix: dict[str, tuple[Scalar, ...]]) -> None:
    """A sync mode needs writes, and dd's one sync call (conv=fdatasync) comes after the
    last block: a call every N writes fits only where N is at least count."""
    modes = [syncmode.parse(m) for m in matrix["sync"]]
    if any(m.syncs for m in modes) and "write" not in matrix["op"]:
        r.problem("sync", "applies to writes, and op has none", "add write to op, or remove sync")
    for mode in modes:
        short = [c for c in matrix["count"] if mode.calls and int(c) > mode.every]
        if short:
            r.problem("sync", f"{mode.text}: dd makes one {mode.kind} call, after its last "
                              f"block (conv={mode.kind}), not one every {mode.every} of "
                              f"{short[0]} blocks",
                      f"give {{{mode.kind}: {short[0]}}} (one call at the end), dsync (every "
                      f"block durable), or a fio workload for a {mode.kind} every "
                      f"{mode.every} writes")


def cases(spec: DdSpec) -> list[dict[str, Scalar]]:
    """The matrix; reads always use the laid-out file, so they lose the `file` axis, and
    sync only applies to writes (none is no sync parameter at all)."""
    seen: dict[tuple[tuple[str, Scalar], ...], dict[str, Scalar]] = {}
    for case in spec.cases():
        if case["op"] == "read":
            case = {k: v for k, v in case.items() if k != "file"}
        if "sync" in case and (case["op"] == "read" or not syncmode.of(case).syncs):
            case = {k: v for k, v in case.items() if k != "sync"}
        seen.setdefault(tuple(case.items()), case)
    return list(seen.values())


def total_bytes(params: Params) -> int:
    """Bytes one run moves: block size times count."""
    return units.parse_size(str(params["bs"])) * int(params["count"])


def _data_path(params: Params, built: Built) -> str:
    """Where dd reads and writes: a file on the filesystem, or the raw device."""
    size = total_bytes(params)
    if built.path is not None:
        if params.get("file") == "fresh":
            return str(built.path / "volbench-dd-fresh.dat")
        return str(built.path / f"volbench-dd-{units.format_size(size)}.dat")
    if built.block_device is None:
        raise VolbenchError(f"target {built.name} has neither a directory nor a device")
    if params.get("file") == "fresh":
        raise VolbenchError(
            f"file: fresh needs a filesystem, and target {built.name} is a raw "
            "device; use file: reuse, or a fresh target for first writes"
        )
    capacity = built.device_bytes
    if capacity is not None and size > capacity:
        raise VolbenchError(
            f"dd would go past the end of {built.block_device} "
            f"({units.format_size(size)} > {units.format_size(capacity)}); "
            "lower bs × count"
        )
    return built.block_device


def _write_argv(path: str, params: Params, direct: bool, fresh: bool) -> list[str]:
    argv = ["dd", "if=/dev/zero", f"of={path}", f"bs={params['bs']}", f"count={params['count']}"]
    mode = syncmode.of(params)
    oflag = (["direct"] if direct else []) + ([mode.kind] if mode.kind in syncmode.FLAGS else [])
    if oflag:
        argv.append("oflag=" + ",".join(oflag))
    conv = [] if fresh else ["notrunc"]
    if mode.calls:
        conv.append(mode.kind)
    elif not direct:
        conv.append("fdatasync")
    if conv:
        argv.append("conv=" + ",".join(conv))
    return argv


def setup_key(spec: DdSpec, params: Params) -> str:
    """Cases with equal keys share one untimed setup per target (one laid-out file, one
    initialised database)."""
    if params.get("file") == "fresh":
        return "dd-nothing"
    return f"dd-layout-{total_bytes(params)}"


def setup(spec: DdSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """Write the shared data file (or device region) once, untimed and unthrottled."""
    if params.get("file") == "fresh":
        return []
    try:
        path = _data_path(params, ctx.built)
    except VolbenchError:
        return []  # command() raises the same error into the run's record
    # The layout writes as fast as it can: its sync mode is the measured runs' business.
    plain = {k: v for k, v in params.items() if k != syncmode.PARAM}
    argv = _write_argv(path, plain, direct=True, fresh=False)
    return [Invocation(tuple(argv), timeout=_timeout(params), throttled=False)]


def _timeout(params: Params) -> float:
    return 120.0 + total_bytes(params) / SLOWEST_BPS


def command(spec: DdSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    path = _data_path(params, ctx.built)
    direct = bool(params["direct"])
    if params["op"] == "write":
        argv = _write_argv(path, params, direct, fresh=params.get("file") == "fresh")
    else:
        argv = [
            "dd",
            f"if={path}",
            "of=/dev/null",
            f"bs={params['bs']}",
            f"count={params['count']}",
        ]
        if direct:
            argv.append("iflag=direct")
    # A progress update a second: the run's rate over time (bursts, warm-up, stalls).
    return Invocation((*argv, "status=progress"), timeout=_timeout(params))


def after(spec: DdSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """Remove a fresh file, so the next repetition writes a new one again."""
    if params.get("file") != "fresh" or ctx.built.path is None:
        return []
    return [Invocation(("rm", "-f", _data_path(params, ctx.built)), timeout=120, throttled=False)]


def estimate(spec: DdSpec, params: Params) -> float:
    """Expected seconds of one run of these params, for `volbench plan` and the progress ETA;
    reads nothing from the machine."""
    return 1.0 + total_bytes(params) / (200 * 1024**2)


def working_set(spec: DdSpec, params: Params) -> int | None:
    """Bytes a run of these params works on (None when unknown); recorded with each run and
    named when a run fails for lack of space."""
    return total_bytes(params)


# -- parsing ------------------------------------------------------------------------------


def _gap_seconds(points: list[tuple[float, float]], last_s: float, seconds: float,
                 moved: float) -> list[tuple[float, float]]:
    """One point a second from last_s to `seconds` for `moved` bytes. dd prints nothing
    while a read or write blocks (an outage: tests/data/dd/coreutils-9.1/loop-stall-gap.stderr,
    no line from 4 s to 11 s): the bytes are taken to have moved at the previous rate until
    they ran out, then nothing (zero-rate seconds), which is how a blocked dd moves them;
    the bytes add up either way. Without a previous rate: the gap's average rate."""
    span = seconds - last_s
    if not points or span <= 1.5:
        return [(seconds, moved / span)]
    rate = points[-1][1]
    steps = round(span)
    out = []
    for k in range(steps - 1):
        share = min(rate, moved) if rate > 0 else moved / span
        out.append((last_s + k + 1, share))
        moved -= share
    return [*out, (seconds, moved)]  # the line's own second: what is left


def parse_progress(text: str) -> tuple[Series, ...]:
    """Per-second bandwidth from `status=progress` updates (CR-separated, before the
    records lines): bytes moved since the previous update over the seconds between them.
    dd prints whole seconds there, and updates about once a second; a longer gap is an
    outage (`_gap_seconds`)."""
    points: list[tuple[float, float]] = []
    last_bytes, last_s = 0, 0.0
    for chunk in re.split(r"[\r\n]", text.split(" records in", 1)[0]):
        m = _SUMMARY.search(chunk)
        if m is None:
            continue
        nbytes, seconds = int(m.group("bytes")), float(m.group("s"))
        if seconds <= last_s:
            continue  # repeated second: the series must increase
        points.extend(_gap_seconds(points, last_s, seconds, nbytes - last_bytes))
        last_bytes, last_s = nbytes, seconds
    return (Series("bw", "B/s", tuple(points)),) if points else ()


def parse_text(text: str, source: str = "dd output") -> Parsed:
    """bw (B/s) and bytes from dd's last summary line; progress updates make the series."""
    summaries = list(_SUMMARY.finditer(text))
    if not summaries:
        raise ParseError(
            "dd",
            source,
            "no 'N bytes … copied, S s, R MB/s' summary (status=none "
            "or status=noxfer print none; dd's summary is on stderr)",
        )
    m = summaries[-1]
    nbytes, seconds = int(m.group("bytes")), float(m.group("s"))
    records = [r for r in _RECORDS.finditer(text) if r.group("dir") == "in"]
    note = ""
    if records and int(records[-1].group("partial")):
        note = (
            "partial records: the input ended early or returned short reads, so fewer "
            "bytes than bs × count moved"
        )
    if seconds > 0:
        bw = Metric("bw", nbytes / seconds, "B/s", note=note)
    elif m.group("rate").lower() == "infinity":
        bw = Metric("bw", None, "B/s", note="too fast to measure (dd printed Infinity)")
    else:
        bw = Metric("bw", float(m.group("rate")) * _RATE_UNIT[m.group("unit")], "B/s", note=note)
    # dd's seconds are bytes / bw: kept in the raw output, not repeated as a metric.
    return Parsed((bw, Metric("bytes", float(nbytes), "B")), parse_progress(text))


def runs_in(text: str) -> int:
    """How many dd runs a text holds (one 'records in' line each)."""
    return sum(1 for r in _RECORDS.finditer(text) if r.group("dir") == "in")


def params_of(text: str) -> dict[str, Scalar]:
    """Parameters under dd workloads' names: from a dd command line in the text (terminal
    copies show it), else block count and size from the records and byte count."""
    params: dict[str, Scalar] = {}
    operands = {m.group("key"): m.group("value") for m in _OPERAND.finditer(text)}
    if operands.get("if") == "/dev/zero":
        params["op"] = "write"
    elif operands.get("of") == "/dev/null":
        params["op"] = "read"
    if "bs" in operands:
        try:
            params["bs"] = units.format_size(units.parse_size(operands["bs"]))
        except ValueError:
            params["bs"] = operands["bs"]
    if operands.get("count", "").isdigit():
        params["count"] = int(operands["count"])
    if "iflag" in operands or "oflag" in operands:
        params["direct"] = "direct" in operands.get("iflag", "") + operands.get("oflag", "")
    records = [r for r in _RECORDS.finditer(text) if r.group("dir") == "out"]
    summary = list(_SUMMARY.finditer(text))
    if records and summary and not int(records[-1].group("partial")):
        full = int(records[-1].group("full"))
        params.setdefault("count", full)
        if full and "bs" not in params:
            params["bs"] = units.format_size(int(summary[-1].group("bytes")) // full)
    return params


def parse_output(spec: DdSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    return parse_text(run.outputs.get("stderr", ""), "dd stderr")


KIND = WorkloadKind(
    "dd",
    "dd sequential write/read with direct I/O (op × bs × count × file reuse|fresh)",
    parse,
    cases,
    command,
    parse_output,
    estimate,
    setup=setup,
    setup_key=setup_key,
    after=after,
    fields=FIELDS,
    tools=("dd",),
    working_set=working_set,
)
