"""fio: job matrices and users' own job files. Builds argv; parses JSON into metrics.

Output is always written with --output=FILE (stdout may carry warnings) as json+,
so latency histograms are kept and percentiles across repetitions can be merged.
Parsing copes with fio 2.x (latencies in µs under `lat`/`clat`) and 3.x (ns under
`lat_ns`/`clat_ns`), group reporting or not, and client/server output
(`client_stats`, one entry per host plus an "All clients" sum).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.config import fieldrules, loadspec, pathcheck
from volbench.config.fields import Reader, choice, flag, percent, whole
from volbench.config.spec import DURATION_POSITIVE, SIZE_POSITIVE, Axis, Field, Text, TextMap
from volbench.config.syncmode import SYNC
from volbench.config.userfile import UserFileError
from volbench.core import units
from volbench.core.errors import ExperimentError, ParseError
from volbench.core.model import Histogram, Metric, Params, Parsed, Scalar
from volbench.services import fioservers
from volbench.stats.curve import SATURATION, SLA_STATS
from volbench.targets.base import Built
from volbench.workloads import fiochecks, fioclient, fiologs, fiosteady, fiosync
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec
from volbench.workloads.fiologs import parse_logs
from volbench.workloads.shape import shape_checked

RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim",
      "randtrim")
MIXED = ("rw", "readwrite", "randrw")
OPS = ("read", "write", "trim")
# fio's own seconds of start-up and tear-down beyond `runtime`, for estimates.
OVERHEAD_S = 1.0
# Percentiles volbench keeps from fio's default list (all of them: they are cheap).
LOG_PREFIX = fiologs.LOG_PREFIX


@dataclass(frozen=True)
class FioSpec(WorkloadSpec):
    """A fio workload as the experiment file gives it: the fields, read and checked."""

    jobfile: Path | None = None
    # Extra fio options passed through verbatim (--key=value), not matrix axes.
    options: Mapping[str, str] = field(default_factory=dict)
    # Where `options:` was written (for messages that name the field).
    options_at: str = "options"
    # A load curve (`load:`, `sla:`): its steps are the values of the `load` axis.
    load: loadspec.Load | None = None
    # Cases with a sync mode run fio's psync engine (no `ioengine` given: fiosync.py).
    sync_engine: bool = False


def _fio_size(value: Any) -> str:
    size = units.parse_size(value)
    if size < 1:
        raise ValueError(f"must be larger than 0, got {value!r}")
    shown = units.format_size(size)
    # format_size rounds (4100 would become 4.0k, i.e. 4096): keep such sizes in bytes.
    return shown if units.parse_size(shown) == size else str(size)


def _seconds(value: Any) -> float:
    seconds = units.parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be longer than 0 s")
    return seconds


# An ioengine's name (libaio, io_uring, psync, posixaio, …): one word on fio's command line.
ENGINE_PATTERN = r"^[A-Za-z0-9_.+:/-]+$"


def _engine(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(ENGINE_PATTERN, value):
        raise ValueError(f"expected an fio ioengine such as libaio or io_uring, got {value!r}")
    return value


# The matrix axes of volbench's own job, in the order they are read.
AXES: tuple[Axis[Any], ...] = (
    Axis("rw", "randread", convert=choice(RW), expected="an fio rw mode",
         help="I/O pattern: " + ", ".join(RW)),
    Axis("bs", "4k", convert=_fio_size, expected="a block size such as 4k", help="block size",
         value=SIZE_POSITIVE),
    Axis("iodepth", 1, convert=whole(1, maximum=fieldrules.MAX_IODEPTH),
         expected="a whole number", help="I/Os in flight per job"),
    Axis("numjobs", 1, convert=whole(1, maximum=fieldrules.MAX_NUMJOBS),
         expected="a whole number", help="jobs (processes) side by side"),
    Axis("size", "256M", convert=_fio_size, expected="a size such as 1G",
         help="the working set: one data file per size", value=SIZE_POSITIVE),
    Axis("runtime", "10s", convert=_seconds, expected="a duration such as 10s",
         help="seconds of each run (time_based)", value=DURATION_POSITIVE),
    Axis("ioengine", "libaio", convert=_engine, expected="an fio ioengine",
         help="fio's ioengine", value={"type": "string", "pattern": ENGINE_PATTERN}),
    Axis("direct", True, convert=lambda v: int(flag(v)), expected="true or false",
         help="O_DIRECT", value=flag.schema),
)
# Only a matrix axis when given, and only for the mixed modes.
RWMIXREAD = Axis("rwmixread", 50, convert=percent, expected="a percentage",
                 help="percent reads of a mixed mode (rw, readwrite, randrw)")
JOBFILE = Text("jobfile", None, help="your own fio job file instead of the matrix")
# fio's option names: lower-case words joined by '_' (one, hugepage-size, by '-').
OPTION_NAME = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*")
OPTIONS = TextMap("options", None, help="more fio options, passed as --key=value (not axes)",
                  keys=OPTION_NAME, keys_are="an fio option name such as iodepth_batch",
                  one_line=True)
FIELDS: tuple[Field[Any], ...] = (*AXES, RWMIXREAD, SYNC, JOBFILE, OPTIONS,
                                  *loadspec.curve_fields(tuple(SLA_STATS)))


def parse(r: Reader, name: str) -> FioSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
    options = r.get(OPTIONS)
    options_at = r.at("options")
    if r.has("jobfile"):
        for key in ("load", "sla"):
            if r.has(key):
                r.raw(key)
                r.problem(key, "a load curve needs volbench's own job (rw, bs, iodepth …)",
                          "remove jobfile: or remove " + key)
        if r.has("sync"):
            r.raw("sync")
            r.problem("sync", "applies to volbench's own job (rw, bs, iodepth …), not to a "
                      "job file", "remove sync: and write fsync=, fdatasync= or sync= in the "
                      "job file, or remove jobfile:")
        path = fieldrules.absolute(r.get(JOBFILE), r.base)
        try:  # a regular file of at most 1 MiB, as each file it includes; <= 4096 jobs
            pathcheck.read_jobfile(path, fiochecks.read_jobfile_text)
        except (UserFileError, pathcheck.TooManyJobs) as exc:
            r.problem("jobfile", str(exc), "give the path of a fio job file, relative to "
                      "the experiment file")
        r.finish()
        return FioSpec(name, "fio", {}, jobfile=path.resolve(), options=options,
                       options_at=options_at)
    matrix: dict[str, tuple[Scalar, ...]] = {f.name: r.get(f) for f in AXES}
    if r.has("rwmixread"):
        matrix["rwmixread"] = r.get(RWMIXREAD)
        if not any(rw in MIXED for rw in matrix["rw"]):
            r.problem("rwmixread", "only applies to mixed modes",
                      f"add one of {', '.join(MIXED)} to rw, or remove rwmixread")
    sync_engine = fiosync.read(r, matrix, options)
    fiochecks.check_direct_sizes(r, matrix)
    load = loadspec.parse(r, tuple(SLA_STATS))
    if load is not None:
        matrix["load"] = load.values()
    r.finish()
    return FioSpec(name, "fio", matrix, options=options, options_at=options_at, load=load,
                   sync_engine=sync_engine)


def cases(spec: FioSpec) -> list[dict[str, Scalar]]:
    """The matrix, minus rwmixread for modes that do not mix and the sync mode where it is
    none or the mode does not write (no duplicate cases)."""
    seen: dict[str, dict[str, Scalar]] = {}
    for case in spec.cases():
        if "rwmixread" in case and case["rw"] not in MIXED:
            case = {k: v for k, v in case.items() if k != "rwmixread"}
        case = fiosync.case(case, spec.sync_engine)
        seen.setdefault(json.dumps(case, sort_keys=True), case)
    return list(seen.values())


def data_file(params: Params, built: Built) -> str:
    """The file (or device) a matrix case's runs on `built` read and write."""
    return _data_file(params, built)[0]


def _data_file(params: Params, built: Built) -> tuple[str, bool]:
    """(fio filename, is_block_device). One file per size, shared by every mode and depth."""
    if built.path is not None:
        return str(built.path / f"volbench-fio-{params['size']}.dat"), False
    if built.block_device is None:
        raise ParseError("fio", built.name, "target has neither a directory nor a device")
    return built.block_device, True


def _job_args(spec: FioSpec, params: Params, built: Built, offered: float | None = None
              ) -> list[str]:
    filename, _ = _data_file(params, built)
    args = [f"--name={spec.name}", f"--filename={filename}"]
    for key in ("rw", "bs", "iodepth", "numjobs", "size", "ioengine", "direct", "rwmixread"):
        if key in params:
            args.append(f"--{key}={params[key]}")
    args += [f"--runtime={params['runtime']:g}", "--time_based=1", "--group_reporting=1"]
    args += [f"--{k}={v}" for k, v in rate_options(params, offered, 1)]
    args += [f"--{k}={v}" for k, v in fiosync.fio_options(params)]
    args += [f"--{k}={v}" for k, v in _expanded(spec, built).items()]
    return args


def _expanded(spec: FioSpec, built: Built) -> dict[str, str]:
    """`options:` with ${VOLBENCH_DIR} / ${VOLBENCH_DEV} put in (fio expands variables in
    job files, not on its command line)."""
    place = pathcheck.Place(str(built.path) if built.path is not None else None,
                            built.block_device)
    return {k: pathcheck.expand(v, place)[0] for k, v in spec.options.items()}


def rate_options(params: Params, offered: float | None, hosts: int) -> list[tuple[str, str]]:
    """fio options that hold a load-curve step at its offered rate.

    `rate_iops` is per job (and per host): the total is spread evenly over them, and
    for a mixed mode split by rwmixread into a read and a write rate. Arrivals are
    Poisson (`rate_process=poisson`): independent users do not arrive evenly spaced, and
    evenly spaced arrivals (fio's default, `linear`) hide the queueing that raises
    latency below saturation (docs/curves.md).
    """
    step = params.get("load")
    if step is None or step == SATURATION:
        return []
    if offered is None:  # `volbench plan`: the rate is resolved when the step runs
        return [("rate_iops", f"<{loadspec.describe_step(step)}>"),
                ("rate_process", "poisson")]
    share = offered / (int(params.get("numjobs", 1)) * hosts)
    if params.get("rw") in MIXED:
        read = share * float(params.get("rwmixread", RWMIXREAD.default)) / 100.0
        rate = f"{max(1, round(read))},{max(1, round(share - read))}"
    else:
        rate = str(max(1, round(share)))
    return [("rate_iops", rate), ("rate_process", "poisson")]


def setup_key(spec: FioSpec, params: Params) -> str:
    """Cases with equal keys share one untimed setup per target (one laid-out file, one
    initialised database)."""
    return f"fio-layout-{params.get('size', 'jobfile')}"


def setup(spec: FioSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """Write the data file once, fully, with direct I/O, so later reads hit real blocks.

    Not `create_only=1`: for a write job fio then only fallocates, and reads of
    unwritten extents return zeros without touching the disk (seen here: 1 M IOPS
    and no device I/O at all).
    """
    if spec.jobfile is not None:
        return []
    if fioclient.clients(ctx) is not None:
        return fioclient.layout(ctx, params)
    # The layout writes the data file too: the same check as the measured run, on the
    # target as it is now (a link or device node planted at the file's name is refused).
    fiochecks.confine(spec, params, ctx.built)
    filename, _ = _data_file(params, ctx.built)
    argv = ["fio", "--name=layout", f"--filename={filename}", f"--size={params['size']}",
            "--rw=write", "--bs=1M", "--direct=1", "--ioengine=libaio", "--iodepth=8",
            "--end_fsync=1", "--output-format=json", f"--output={ctx.rundir / 'layout.json'}"]
    size = units.parse_size(str(params["size"]))
    return [Invocation(tuple(argv), timeout=120 + size / (5 * 1024**2), throttled=False,
                       outputs={"layout.json": ctx.rundir / "layout.json"})]


def command(spec: FioSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured run's one process for these params (argv, timeout, the files it writes);
    nothing starts here: the runner starts it through system/proc.py."""
    if fioclient.clients(ctx) is not None:
        return _client_command(spec, params, ctx)
    built, rundir = ctx.built, ctx.rundir
    files = fiochecks.jobfile_copy(spec, rundir)
    fiochecks.confine(spec, params, built, next(iter(files.items()), None))
    out = rundir / "fio.json"
    common = ["fio", "--output-format=json+", f"--output={out}",
              *(f"--{k}={v}" for k, v in fiologs.LOG_OPTIONS),
              *(f"--{k}={v}" for k, v in fiosteady.options(ctx.steady))]
    if spec.jobfile is not None:
        argv = [*common, *(f"--{k}={v}" for k, v in _expanded(spec, built).items())]
        if built.path is not None:
            argv.append(f"--directory={built.path}")
        argv.append(str(rundir / "job.fio"))
        # A job file sets its own runtime; allow an hour unless options say otherwise.
        timeout = 3600.0
    else:
        argv = [*common, *_job_args(spec, params, built, ctx.offered)]
        timeout = 3 * float(params["runtime"]) + 120
    env = {"VOLBENCH_DIR": str(built.path or ""), "VOLBENCH_DEV": built.block_device or ""}
    return Invocation(tuple(argv), timeout=timeout, cwd=rundir, env=env,
                      outputs={"fio.json": out}, output_globs=fiologs.LOG_GLOBS,
                      uncached=fiochecks.uncached(spec.jobfile is not None,
                                                    spec.options, params),
                      files=files,
                      check=fiochecks.copy_check(spec, params, built) if files else None)


def _client_command(spec: FioSpec, params: Params, ctx: RunContext) -> Invocation:
    """Client/server mode (a multi-host target): one job file per host, see fioclient."""
    texts: dict[str, str] = {}
    clients = fioclient.clients(ctx) or []
    for client in clients:
        # Each host's own directory or device, as that host sees it (not resolved here).
        place = pathcheck.Place(client.get("path") or None, client.get("device") or None)
        problems = fiochecks.confinement(spec, params, place)
        if problems:
            raise ExperimentError(problems, f"fio workload {spec.name} on {client['host']}")
        options = {k: pathcheck.expand(v, place)[0] for k, v in spec.options.items()}
        if spec.jobfile is not None:
            texts[client["host"]] = fioclient.user_job_text(spec.jobfile, client, options)
            continue
        job = [(k, str(params[k])) for k in ("rw", "bs", "iodepth", "numjobs", "size",
                                             "ioengine", "direct", "rwmixread") if k in params]
        job += [("runtime", f"{params['runtime']:g}"), ("time_based", "1"),
                ("group_reporting", "1"), *rate_options(params, ctx.offered, len(clients)),
                *fiosync.fio_options(params)]
        texts[client["host"]] = fioclient.job_text(spec.name, client, params, job, options)
    timeout = 3600.0 if spec.jobfile is not None else 3 * float(params["runtime"]) + 120
    return fioclient.command(ctx, texts, timeout)


def run_seconds(spec: FioSpec, params: Params) -> float | None:
    """The measured seconds of a matrix case (time_based: its runtime); a job file's
    are its own, not known here."""
    return None if spec.jobfile is not None else float(params["runtime"])


def estimate(spec: FioSpec, params: Params) -> float:
    """Expected seconds of one run of these params, for `volbench plan` and the progress ETA;
    reads nothing from the machine."""
    return float(params.get("runtime", 60)) + OVERHEAD_S


def working_set(spec: FioSpec, params: Params) -> int | None:
    """Bytes a run of these params works on (None when unknown); recorded with each run and
    named when a run fails for lack of space."""
    if "size" not in params:
        return None
    return units.parse_size(str(params["size"]))


# -- parsing ------------------------------------------------------------------------------

def load_json(text: str, source: str) -> dict[str, Any]:
    """fio's JSON, skipping any text fio printed before it (warnings, client banners)."""
    start = text.find("{")
    while start != -1:
        try:
            data, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(data, dict) and ("jobs" in data or "client_stats" in data):
            return data
        start = text.find("{", start + 1)
    raise ParseError("fio", source, "no fio JSON object with 'jobs' or 'client_stats' found")


def _pct_name(key: str) -> str:
    return f"{float(key):g}"


def _latency(stats: Mapping[str, Any], prefix: str, scale: float, tags: dict[str, str],
             out: list[Metric]) -> None:
    for field_name, metric in (("mean", "mean"), ("min", "min"), ("max", "max"),
                               ("stddev", "stddev")):
        if field_name in stats:
            out.append(Metric(f"{prefix}_{metric}", float(stats[field_name]) * scale, "s", tags))
    percentiles = stats.get("percentile") or {}
    for key, value in percentiles.items():
        # fio up to 3.1 repeats a meaningless "0.00" key: skip it.
        if float(key) > 0:
            out.append(Metric(f"{prefix}_p{_pct_name(key)}", float(value) * scale, "s", tags))


def _latency_sources(side: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], float]]:
    """lat/clat/slat stats and their scale to seconds (3.x: ns; 2.x: µs)."""
    found: dict[str, tuple[Mapping[str, Any], float]] = {}
    for name in ("lat", "clat", "slat"):
        if isinstance(side.get(f"{name}_ns"), Mapping):
            found[name] = (side[f"{name}_ns"], 1e-9)
        elif isinstance(side.get(name), Mapping):
            found[name] = (side[name], 1e-6)
    return found


def _major_version(data: Mapping[str, Any]) -> int | None:
    m = re.match(r"fio-(\d+)", str(data.get("fio version", "")))
    return int(m.group(1)) if m else None


def _io_bytes(side: Mapping[str, Any], major: int | None) -> float:
    """Bytes moved. fio 2.x wrote io_bytes in KiB; 3.x in bytes (with io_kbytes beside it)."""
    if "io_kbytes" in side:
        return float(side["io_kbytes"]) * 1024 if "io_bytes" not in side \
            else float(side["io_bytes"])
    kib = (major is not None and major < 3) or (major is None and not any(
        k.endswith("_ns") for k in side))
    return float(side.get("io_bytes", 0)) * (1024 if kib else 1)


def _side_metrics(side: Mapping[str, Any], tags: dict[str, str], major: int | None,
                  out: list[Metric], hists: list[Histogram]) -> None:
    out.append(Metric("iops", float(side.get("iops", 0.0)), "op/s", tags))
    bw = side.get("bw_bytes")
    out.append(Metric("bw", float(bw) if bw is not None else float(side.get("bw", 0)) * 1024,
                      "B/s", tags))
    out.append(Metric("io_bytes", _io_bytes(side, major), "B", tags))
    if "total_ios" in side:
        out.append(Metric("total_ios", float(side["total_ios"]), "", tags))
    if "runtime" in side:
        out.append(Metric("runtime", float(side["runtime"]) / 1000, "s", tags))
    for name, (stats, scale) in _latency_sources(side).items():
        _latency(stats, name, scale, tags, out)
        bins = stats.get("bins")
        if isinstance(bins, Mapping) and bins:
            pairs = sorted((float(k) * scale, int(v)) for k, v in bins.items())
            hists.append(Histogram(name, "s", tuple(pairs), tags))


def _job_entries(data: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], dict[str, str]]]:
    """(job, tags) pairs with unique tags.

    Client/server output is tagged by host ("All clients" becomes host=all); two
    servers on one address are told apart by port. Jobs are tagged by name when
    there are several, with an index when names repeat (numjobs without
    group_reporting gives identical names).
    """
    if "client_stats" in data:
        jobs = list(data["client_stats"])
        hosts = [str(j.get("hostname", "?")) for j in jobs]
        entries = []
        for job, host in zip(jobs, hosts, strict=True):
            if job.get("jobname") == "All clients":
                host = "all"
            elif hosts.count(host) > 1 and "port" in job:
                host = f"{host}:{job['port']}"
            entries.append((job, {"host": host}))
        return entries
    jobs = list(data.get("jobs", []))
    if len(jobs) == 1:
        return [(jobs[0], {})]
    names = [str(j.get("jobname", "?")) for j in jobs]
    seen: dict[str, int] = {}
    entries = []
    for job, name in zip(jobs, names, strict=True):
        if names.count(name) > 1:
            seen[name] = seen.get(name, -1) + 1
            name = f"{name}.{seen[name]}"
        entries.append((job, {"job": name}))
    return entries


def _group_totals(data: Mapping[str, Any], major: int | None) -> list[Metric]:
    """Sums over concurrent jobs (same group, no group_reporting), tagged job=all.

    IOPS and bandwidth add up; mean latency is weighted by each job's I/O count.
    Stonewalled jobs (different groups) ran one after another: no total for them.
    """
    jobs = list(data.get("jobs", []))
    if len(jobs) < 2 or len({j.get("groupid") for j in jobs}) != 1:
        return []
    out: list[Metric] = []
    for op in OPS:
        sides = [j[op] for j in jobs if isinstance(j.get(op), Mapping) and j[op].get("iops")]
        if not sides:
            continue
        tags = {"job": "all", "op": op}
        out.append(Metric("iops", sum(float(s["iops"]) for s in sides), "op/s", tags))
        out.append(Metric("bw", sum(float(s.get("bw_bytes", float(s.get("bw", 0)) * 1024))
                                    for s in sides), "B/s", tags))
        out.append(Metric("io_bytes", sum(_io_bytes(s, major) for s in sides), "B", tags))
        weighted = [(float(src[0]["mean"]) * src[1], float(s.get("total_ios", s["iops"])))
                    for s in sides if (src := _latency_sources(s).get("lat"))]
        total = sum(n for _, n in weighted)
        if weighted and total:
            out.append(Metric("lat_mean", sum(m * n for m, n in weighted) / total, "s", tags))
    return out + fiosync.totals([fiosync.metrics(j, {}, fiosync.engine_of(data, j))[0]
                                 for j in jobs])


@shape_checked("fio")
def parse_json(text: str, source: str = "fio output") -> Parsed:
    """A Parsed from fio's JSON (the 2.x and 3.x formats of tests/data/fio); JSON without job
    results is a ParseError."""
    data = load_json(text, source)
    entries = _job_entries(data)
    if not entries:
        raise ParseError("fio", source, "the JSON holds no job results")
    major = _major_version(data)
    metrics: list[Metric] = []
    hists: list[Histogram] = []
    for job, tags in entries:
        # fio writes total_err only for a job with continue_on_error: its errors were
        # counted and the job went on (a fault's I/O errors, io_errors), not a failure.
        if job.get("error") and "total_err" not in job:
            raise ParseError("fio", source, f"job {job.get('jobname')} reported error "
                                            f"{job['error']} ({os.strerror(int(job['error']))})")
        for op in OPS:
            side = job.get(op)
            if isinstance(side, Mapping) and (side.get("io_bytes") or side.get("io_kbytes")
                                               or side.get("total_ios")):
                _side_metrics(side, {**tags, "op": op}, major, metrics, hists)
        synced, sync_hists = fiosync.metrics(job, tags, fiosync.engine_of(data, job))
        metrics += synced
        hists += sync_hists
        for key, name in (("usr_cpu", "cpu_usr"), ("sys_cpu", "cpu_sys")):
            if key in job:
                metrics.append(Metric(name, float(job[key]), "%", tags))
        metrics += fiosteady.metrics(job, tags)  # steady: {within: run}
    metrics += _group_totals(data, major)
    disks = list(data.get("disk_util", []) or [])
    hosts = [str(d.get("hostname", "")) for d in disks]
    for disk, host in zip(disks, hosts, strict=True):
        if "util" not in disk:
            continue
        tags = {"device": str(disk.get("name", "?"))}
        if host:  # client/server: each server reports its own devices
            tags["host"] = f"{host}:{disk['port']}" if hosts.count(host) > 1 else host
        metrics.append(Metric("disk_util", float(disk["util"]), "%", tags))
    return Parsed(tuple(metrics), (), tuple(hists))


def parse_output(spec: FioSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
    outputs = run.outputs
    if fioclient.MANIFEST in outputs:  # client/server mode: results per host
        return fioclient.parse(outputs, parse_json, parse_logs)
    if "fio.json" not in outputs:
        raise ParseError("fio", "run", "fio wrote no JSON output file")
    parsed = parse_json(outputs["fio.json"], "fio.json")
    logs = {k: v for k, v in outputs.items() if k.endswith(".log")}
    series = parse_logs(logs)
    # Window percentiles need the per-second histograms, which only this parser reads;
    # the window means are added by the engine (stats.windows) like any workload's.
    extra = fiologs.window_percentiles(logs, series)
    return Parsed(parsed.metrics + tuple(extra), series, parsed.histograms)


KIND = WorkloadKind(
    "fio", "fio job matrices (rw × bs × iodepth × numjobs × size …) or your own job file",
    parse, cases, command, parse_output, estimate, setup=setup, setup_key=setup_key,
    tools=("fio",), fields=FIELDS, working_set=working_set,
    confinement=fiochecks.confinement,
    fault_clock="child", run_seconds=run_seconds,
    service=fioservers.fio_servers, service_key=fioservers.service_key, partial_results=True,
)
