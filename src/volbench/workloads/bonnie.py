"""bonnie++: block and character I/O, seeks and file creation. Builds argv; parses the CSV.

bonnie++ runs with `-q`, so its stdout is the CSV line (the human table goes to
stderr). Columns are mapped per CSV layout: 1.96/1.97 rows have 48 fields, 1.98
rows (bonnie++ 1.98 and 2.00a) 50, with the seek count and the number of seeker
processes after the chunk size. bonnie++ 2.00a's own header line (`-x`) still
names only 48 columns, so the header is never used to map fields.

Per column: `+++++` (`+++` for %CPU) means the test ended too fast to measure;
it becomes a metric with value None and a note, never a number. An empty field
means the test was skipped (`-f`, `-s 0`, `-n 0`) and gives no metric.
Columns that measure the CPU rather than the disk carry `cpu_bound=yes` (see
CPU_BOUND). Rates are in base units: K/s (KiB) becomes B/s, latencies seconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volbench.config.fields import Reader, flag, whole
from volbench.config.spec import SIZE, Axis, Field, Integer, Size, SyncAxis
from volbench.core import syncmode, units
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Metric, Params, Parsed, Scalar
from volbench.targets.base import Built
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec
from volbench.workloads.macro import USER, read_user

TOO_FAST = "too fast to measure (bonnie++ printed +++++)"
MIB = 1024**2
# The columns of one result, in CSV order: (column, metric, unit factor to base units).
IO_TESTS = (
    ("putc", "bw", 1024.0),
    ("put_block", "bw", 1024.0),
    ("rewrite", "bw", 1024.0),
    ("getc", "bw", 1024.0),
    ("get_block", "bw", 1024.0),
    ("seeks", "ops", 1.0),
)
FILE_TESTS = (
    ("seq_create", "ops", 1.0),
    ("seq_stat", "ops", 1.0),
    ("seq_del", "ops", 1.0),
    ("ran_create", "ops", 1.0),
    ("ran_stat", "ops", 1.0),
    ("ran_del", "ops", 1.0),
)
# Decided per column. putc/getc move one byte per C library call: bonnie++ shows ~99 % CPU
# for them on every disk (seed 003 left them out as unstable CPU figures). seq_stat/ran_stat
# ("Read" under Create) stat files whose inodes were just created and are still cached: the
# CPU is the limit (seed 003: "CPU bound", 100 % CPU, the same number on local and network).
CPU_BOUND = frozenset({"putc", "getc", "seq_stat", "ran_stat"})
_HEAD = (
    "format_version",
    "bonnie_version",
    "name",
    "concurrency",
    "seed",
    "file_size",
    "chunk_size",
)
_FILES = ("num_files", "max_size", "min_size", "num_dirs", "file_chunk_size")


def _results(tests: tuple[tuple[str, str, float], ...]) -> tuple[str, ...]:
    return tuple(f for col, _, _ in tests for f in (col, f"{col}_cpu"))


_LATENCIES = tuple(f"{col}_latency" for col, _, _ in IO_TESTS + FILE_TESTS)
# CSV layouts by field count. 1.98 added the seek count and seeker processes after chunk_size.
LAYOUTS: dict[int, tuple[str, ...]] = {
    48: (*_HEAD, *_results(IO_TESTS), *_FILES, *_results(FILE_TESTS), *_LATENCIES),
    50: (
        *_HEAD,
        "seek_count",
        "seek_proc_count",
        *_results(IO_TESTS),
        *_FILES,
        *_results(FILE_TESTS),
        *_LATENCIES,
    ),
}
LAYOUT_OF_VERSION = {"1.96": 48, "1.97": 48, "1.98": 50}
# bonnie++ 1.0x (1.02, 1.03a-e): no version fields, no latencies; 27 fields from the
# machine name on. Its rows have their own layout even in a file that mixes versions.
LAYOUT_103 = ("name", "file_size", *_results(IO_TESTS), "num_files", *_results(FILE_TESTS))
_VERSION = re.compile(r"^\d+\.\d+\w*$")
# 1.0x's size field: "500M", "1G:32k" (size:chunk), or empty with -s 0.
_SIZE_103 = re.compile(r"^(?:\d+[KMGT]?(?::\d+[kKmM]?)?)?$")
_LATENCY = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s)$")
_LATENCY_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class BonnieSpec(WorkloadSpec):
    """A bonnie++ workload as the experiment file gives it: the fields, read and checked."""

    # -r: the RAM size bonnie++ assumes; it refuses file sizes below twice this value.
    ram: int = 256 * MIB
    concurrency: int = 1
    # Unprivileged user to run as (bonnie++ wants -u when started as root).
    user: str | None = None


def size_text(size: int) -> str:
    """bonnie++'s own spelling of a size: whole GiB as "1G", else MiB ("7423M"), never rounded."""
    if size and size % 1024**3 == 0:
        return f"{size // 1024**3}G"
    return f"{size // MIB}M" if size else "0"


def _sync(value: Any) -> bool:
    """bonnie++'s -b is an fsync after every write: true/false, or the `sync:` axis's
    none and {fsync: 1} (core/syncmode.py); other modes have no bonnie++ option."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    mode = syncmode.parse(value)  # a ValueError names the forms
    if mode.kind == syncmode.NONE or (mode.kind == syncmode.FSYNC and mode.every == 1):
        return mode.syncs
    raise ValueError(f"{mode.text}: bonnie++ can only fsync after every write (-b): give "
                     "{fsync: 1} (or true), none (or false), or use fio or dd for "
                     f"{mode.describe()}")


def _mib_size(value: Any) -> str:
    size = units.parse_size(value)
    if size % MIB:
        raise ValueError(f"bonnie++ sizes are whole MiB, got {value!r}")
    return size_text(size)


AXES: tuple[Axis[Any], ...] = (
    Axis("size", "512M", convert=_mib_size, expected="a size such as 512M", value=SIZE,
         help="file size (-s), whole MiB, at least twice ram"),
    Axis("files", 16, convert=whole(0, "a whole number (0 skips the test)"),
         expected="a number of files in units of 1024",
         help="files of the create/stat/delete test in units of 1024 (-n), 0 skips it"),
    Axis("per_char", False, convert=flag, expected="true or false",
         help="the slow per-character tests (without -f)"),
    Axis("direct", False, convert=flag, expected="true or false", help="O_DIRECT (-D)"),
    SyncAxis("sync", False, convert=_sync, expected="true or false",
             help="fsync after every write (-b): true or {fsync: 1}; false or none",
             words=(syncmode.NONE,), calls=(syncmode.FSYNC,), most=1, booleans=True),
)
RAM = Size("ram", "256M", help="the RAM bonnie++ is told the machine has (-r)")
CONCURRENCY = Integer("concurrency", 1, minimum=1, maximum=64,
                      help="bonnie++'s concurrency (-c)")
FIELDS: tuple[Field[Any], ...] = (*AXES, RAM, CONCURRENCY, USER)


def parse(r: Reader, name: str) -> BonnieSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    matrix: dict[str, tuple[Scalar, ...]] = {f.name: r.get(f) for f in AXES}
    ram = r.get(RAM)
    if ram % MIB or ram < MIB:
        r.problem("ram", "must be a whole number of MiB, at least 1M")
    for i, size in enumerate(matrix["size"]):
        n = units.parse_size(str(size))
        if 0 < n < 2 * ram:
            where = f"size[{i}]" if len(matrix["size"]) > 1 else "size"
            r.problem(
                where,
                f"bonnie++ refuses a file size below twice ram ({size} < 2 × "
                f"{units.format_size(ram)})",
                "raise size or lower ram",
            )
    if all(matrix["per_char"]) and all(matrix["direct"]):
        r.problem(
            "per_char",
            "the per-char tests fail with direct I/O (bonnie++ -D)",
            "set per_char: false or direct: false",
        )
    user = read_user(r)
    spec = BonnieSpec(
        name,
        "bonnie++",
        matrix,
        ram=ram,
        concurrency=r.get(CONCURRENCY),
        user=user,
    )
    r.finish()
    return spec


def cases(spec: BonnieSpec) -> list[dict[str, Scalar]]:
    """The matrix minus per-char tests with direct I/O (bonnie++ fails on those at once)."""
    return [c for c in spec.cases() if not (c["per_char"] and c["direct"])]


def _directory(spec: BonnieSpec, built: Built) -> str:
    if built.path is None:
        raise VolbenchError(
            f"bonnie++ needs a filesystem, and target {built.name} is a raw "
            "block device; give the target a filesystem (fs: xfs) or use dd "
            "or fio on the raw device"
        )
    return str(built.path / f"volbench-{spec.name}")


def setup_key(spec: BonnieSpec, params: Params) -> str:
    """Cases with equal keys share one untimed setup per target (one laid-out file, one
    initialised database)."""
    return f"bonnie-dir-{spec.name}"


def setup(spec: BonnieSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """The scratch directory on the target, owned by the user bonnie++ runs as."""
    if ctx.built.path is None:
        return []  # command() explains why this target cannot run bonnie++
    directory = _directory(spec, ctx.built)
    if spec.user:
        argv: tuple[str, ...] = ("install", "-d", "-o", spec.user, "-m", "0755", directory)
    else:
        argv = ("mkdir", "-p", directory)
    return [Invocation(argv, timeout=60, throttled=False)]


def command(spec: BonnieSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    size = units.parse_size(str(params["size"]))
    argv = [
        "bonnie++",
        "-d",
        _directory(spec, ctx.built),
        "-s",
        str(size // MIB),
        "-n",
        str(params["files"]),
        "-m",
        ctx.built.name,
        "-q",
    ]
    if size:
        argv += ["-r", str(spec.ram // MIB)]
    if not params["per_char"]:
        argv.append("-f")
    if params["direct"]:
        argv.append("-D")
    if params["sync"]:
        argv.append("-b")
    if spec.concurrency > 1:
        argv += ["-c", str(spec.concurrency)]
    if ctx.host.euid == 0:
        # As root bonnie++ insists on -u; it then switches to that user itself.
        argv += ["-u", spec.user or "root"]
    return Invocation(tuple(argv), timeout=max(600.0, 10 * estimate(spec, params)))


def estimate(spec: BonnieSpec, params: Params) -> float:
    """Seconds, assuming ~100 MiB/s block I/O and ~5 MiB/s per-char I/O (seen on 2 cores)."""
    size = units.parse_size(str(params["size"]))
    seconds = 5.0 + 4 * size / (100 * MIB)
    if params["per_char"]:
        seconds += 2 * size / (5 * MIB)
    return seconds + int(params["files"]) * 1024 * 6 / 20000


def working_set(spec: BonnieSpec, params: Params) -> int | None:
    """Bytes a run of these params works on (None when unknown); recorded with each run and
    named when a run fails for lack of space."""
    return units.parse_size(str(params["size"])) or None


# -- parsing ------------------------------------------------------------------------------


def _is_103(fields: list[str]) -> bool:
    """A bonnie++ 1.0x row: 27 fields, a size (or nothing) second, the rest results."""
    return (len(fields) == len(LAYOUT_103) and bool(_SIZE_103.match(fields[1]))
            and not _VERSION.match(fields[0])
            and all(_RESULT.match(f) for f in fields[2:14] + fields[15:]))


_RESULT = re.compile(r"^(?:\d+(?:\.\d+)?|\++)?$")


def _rows(text: str) -> list[list[str]]:
    """CSV result rows: lines whose first field is a format version (1.96 on), or 1.0x rows
    (skips header lines and the human-readable table)."""
    rows = []
    for line in text.splitlines():
        fields = line.strip().split(",")
        if (len(fields) > 20 and _VERSION.match(fields[0])) or _is_103(fields):
            rows.append(fields)
    return rows


def map_row(fields: list[str], source: str) -> dict[str, str]:
    """Field name -> text for one CSV row, by layout (format version checked against width;
    a 1.0x row has no version and no latency fields: those read as empty)."""
    if _is_103(fields):
        row = dict.fromkeys(LAYOUTS[48], "")
        row.update(zip(LAYOUT_103, fields, strict=True))
        row["file_size"] = row["file_size"].split(":", 1)[0]
        row["format_version"] = "1.0x"
        return row
    version = fields[0]
    width = LAYOUT_OF_VERSION.get(version, len(fields))
    if width not in LAYOUTS or len(fields) != width:
        known = ", ".join(f"{v} ({n} fields)" for v, n in LAYOUT_OF_VERSION.items())
        raise ParseError(
            "bonnie++",
            source,
            f"a CSV row of format version {version} with {len(fields)} fields; "
            f"known layouts: {known} (bonnie++ 1.03 CSV has no version field "
            "and is not supported)",
        )
    return dict(zip(LAYOUTS[width], fields, strict=True))


def _latency(text: str) -> float:
    m = _LATENCY.match(text)
    if not m:
        raise ValueError(f"latency {text!r}")
    return float(m.group(1)) * _LATENCY_SCALE[m.group(2)]


def _number(text: str) -> float:
    return float(text)


def _metric(
    name: str, unit: str, text: str, read: Any, tags: dict[str, str], note: str, out: list[Metric]
) -> None:
    if not text:
        return
    if set(text) == {"+"}:
        out.append(Metric(name, None, unit, tags, "; ".join(n for n in (TOO_FAST, note) if n)))
        return
    out.append(Metric(name, read(text), unit, tags, note))


def _test_metrics(
    row: Mapping[str, str],
    column: str,
    metric: str,
    factor: float,
    tags: dict[str, str],
    note: str,
    source: str,
    out: list[Metric],
) -> None:
    rate = row[column]
    if not rate:
        return  # skipped test (-f, -s 0, -n 0): nothing measured
    tags = {**tags, "test": column, "cpu_bound": "yes" if column in CPU_BOUND else "no"}
    unit = "B/s" if metric == "bw" else "op/s"
    try:
        _metric(metric, unit, rate, lambda t: _number(t) * factor, tags, note, out)
        _metric("cpu", "%", row[f"{column}_cpu"], _number, tags, note, out)
        _metric("latency_max", "s", row[f"{column}_latency"], _latency, tags, note, out)
    except ValueError as exc:
        raise ParseError("bonnie++", source, f"column {column}: unreadable value ({exc})") from exc


def cache_note(file_size: int, ram_bytes: int | None) -> str:
    """A note when the file is below twice the RAM (the page cache then holds much of it); empty
    otherwise, or when the RAM is unknown."""
    if not ram_bytes or not file_size or file_size >= 2 * ram_bytes:
        return ""
    return (
        f"cache-influenced: file size {units.format_size(file_size)} is below twice the "
        f"RAM ({units.format_size(ram_bytes)}), so the page cache holds much of it"
    )


def parse_csv(
    text: str, source: str = "bonnie++ output", ram_bytes: int | None = None, direct: bool = False
) -> Parsed:
    """Metrics of every result row in `text`.

    With `ram_bytes` (the host's RAM), the I/O columns of a file smaller than twice the
    RAM get a cache-influenced note, unless the run used direct I/O (`direct`).
    """
    rows = _rows(text)
    if not rows:
        raise ParseError(
            "bonnie++",
            source,
            "no CSV result line (run bonnie++ with -q, or "
            "keep the CSV line it prints after the table)",
        )
    metrics: list[Metric] = []
    for i, fields in enumerate(rows, 1):
        row = map_row(fields, source)
        tags = {"row": str(i)} if len(rows) > 1 else {}
        size = units.parse_size(row["file_size"]) if row["file_size"] else 0
        note = "" if direct else cache_note(size, ram_bytes)
        for column, metric, factor in IO_TESTS:
            _test_metrics(row, column, metric, factor, tags, note, source, metrics)
        for column, metric, factor in FILE_TESTS:
            _test_metrics(row, column, metric, factor, tags, "", source, metrics)
    return Parsed(tuple(metrics))


def params_of(text: str, source: str = "bonnie++ output") -> dict[str, Scalar]:
    """The parameters a CSV row records, under the names bonnie++ workloads use."""
    rows = _rows(text)
    if not rows:
        return {}
    row = map_row(rows[0], source)
    params: dict[str, Scalar] = {}
    if row["file_size"]:
        params["size"] = size_text(units.parse_size(row["file_size"]))
        params["per_char"] = bool(row["putc"])
    files = row["num_files"].split(":", 1)[0]  # 1.0x: "16:100000:10/64"
    if files.isdigit():
        params["files"] = int(files)
    return params


def parse_output(spec: BonnieSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    return parse_csv(
        run.outputs.get("stdout", ""),
        "bonnie++ stdout",
        ram_bytes=run.host.memory_bytes,
        direct=bool(params["direct"]),
    )


KIND = WorkloadKind(
    "bonnie++",
    "bonnie++: block/char I/O, seeks, file create/stat/delete (size × files × …)",
    parse,
    cases,
    command,
    parse_output,
    estimate,
    setup=setup,
    setup_key=setup_key,
    tools=("bonnie++",),
    fields=FIELDS,
    working_set=working_set,
)
