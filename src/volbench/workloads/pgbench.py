"""pgbench on a throwaway PostgreSQL cluster whose data lives on the target.

Two modes (a matrix axis, `mode`):
- `run` (default): the database is initialised once per target and scale, untimed
  (`pgbench -i`, then CHECKPOINT), in a database of its own per scale (`bench_s<N>`),
  so interleaved cases of several scales never re-initialise; each measured run is
  `pgbench -c -j -T|-t -P 1 -l` with a builtin or custom script;
- `init`: the measured run *is* `pgbench -i -s N` (in `init_s<N>`), repeated from
  scratch every repetition (pgbench drops the tables first): init time as a whole,
  per phase, and the row-generation rate over time (stalls show).

Latency percentiles come from pgbench's per-transaction logs (`-l`, optionally
`--sampling-rate`): binned into a histogram (3 significant digits) that merges across
repetitions. The per-second series comes from `-P 1`.

With `clients_from: [host, …]` the measured runs come from several client hosts at
once over TCP (see pgbench_hosts.py and services/pgclients.py).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from volbench.config import fieldrules, loadspec
from volbench.config.fields import Reader
from volbench.config.spec import Axis, Boolean, Field, Number, Text, TextList, TextMap
from volbench.core import units
from volbench.core.errors import ParseError
from volbench.core.model import Histogram, Params, Parsed, Scalar, digest
from volbench.remote.hosts import HostSpec
from volbench.services import pgclients, postgres
from volbench.stats.curve import PGBENCH_SLA_STATS, SATURATION
from volbench.system.host import hostinfo, pgfind
from volbench.workloads import pgbench_hosts
from volbench.workloads import pgbench_parse as parsing
from volbench.workloads.base import (
    Invocation,
    RunContext,
    RunOutput,
    ServiceContext,
    ServiceHandle,
    WorkloadKind,
    WorkloadSpec,
)

MODES = ("run", "init")
BUILTINS = ("tpcb-like", "simple-update", "select-only")
QUERY_MODES = ("simple", "extended", "prepared")
INIT_STEPS = "dtgGvpf"
# pg_database_size after `pgbench -i -s N` on this project's machines (PostgreSQL 15,
# fillfactor 100): 23.6, 86.3, 164.7 and 321.5 MB for N = 1, 5, 10, 20, i.e.
# 7.9 MB + 15.68 MB per scale unit (100000 accounts rows each).
BASE_BYTES = 7_900_000
BYTES_PER_SCALE = 15_680_000
# Seconds of init per scale unit on an unthrottled loop disk here (0.35), for estimates.
INIT_S_PER_SCALE = 0.4
TXLOG = "pgbench_txlog"
RUN_ONLY = ("clients", "threads", "duration", "transactions", "script", "query_mode", "load")
# Options volbench sets itself; in `options:` they would fight with the matrix.
MANAGED = ("-h", "--host", "-p", "--port", "-U", "--username", "-i", "--initialize",
           "-s", "--scale", "-l", "--log", "--log-prefix", "-P", "--progress")
SCALE_FORMS = "a scale factor (10), a database size (4G) or a multiple of RAM (2xRAM)"
_RAM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*RAM\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class PgbenchSpec(WorkloadSpec):
    cluster: postgres.ClusterConfig = postgres.ClusterConfig()
    # pgbench -I steps for every init ("" = pgbench's default, dtgvp).
    init_steps: str = ""
    init_options: tuple[str, ...] = ()
    # Extra pgbench arguments for measured runs, verbatim.
    options: tuple[str, ...] = ()
    # Fraction of transactions written to the latency log (--sampling-rate).
    log_sampling: float = 1.0
    # CHECKPOINT after every measured run, so no run pays for its predecessor's writes.
    checkpoint: bool = True
    # Client hosts the measured runs come from (names from `hosts:`; resolved into
    # client_hosts when the experiment is loaded), and the server address they use.
    clients_from: tuple[str, ...] = ()
    listen: str | None = None
    client_hosts: tuple[HostSpec, ...] = ()
    where: str = ""
    # A load curve (`load:`, `sla:`): its steps are the values of the `load` axis, run
    # through pgbench --rate (docs/curves.md).
    load: loadspec.Load | None = None


def scale_for_bytes(size: int) -> int:
    """The smallest scale whose database is at least `size` bytes (at least 1)."""
    return max(1, math.ceil((size - BASE_BYTES) / BYTES_PER_SCALE))


def database_bytes(scale: int) -> int:
    return BASE_BYTES + BYTES_PER_SCALE * scale


def _scale(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected {SCALE_FORMS}, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"a scale factor is at least 1, got {value}")
        return value
    text = str(value).strip()
    if text.isdigit():
        return _scale(int(text))
    m = _RAM.match(text)
    if m:
        # Read when the file is read, not at run time: the scale is part of each case's
        # identity (plan, resume, reports). The lab guest reads the file again, with its RAM.
        ram = hostinfo.memory_bytes()
        if not ram:
            raise ValueError("cannot read this machine's RAM (/proc/meminfo) for xRAM")
        return scale_for_bytes(int(float(m.group(1)) * ram))
    try:
        return scale_for_bytes(units.parse_size(text))
    except ValueError:
        raise ValueError(f"expected {SCALE_FORMS}, got {value!r}") from None


def _positive(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return value


def _whole_seconds(value: Any) -> float:
    seconds = units.parse_duration(value)
    if seconds < 1 or seconds != int(seconds):
        raise ValueError(f"pgbench -T takes whole seconds (at least 1), got {value!r}")
    return seconds


def _script(base: Path | None) -> Callable[[Any], str]:
    """A builtin name, or a script file (relative to the experiment file's folder)."""
    def convert(value: Any) -> str:
        text = str(value)
        if text in BUILTINS:
            return text
        path = fieldrules.absolute(text, base)
        if path.is_file():
            return str(path.resolve())
        raise ValueError(f"'{text}' is neither a builtin script ({', '.join(BUILTINS)}) nor a "
                         "readable script file; expected a builtin name or a file path")
    return convert


def _choice(choices: tuple[str, ...]) -> Any:
    def convert(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"'{value}' is not one of: {', '.join(choices)}")
        return str(value)
    return convert


def _pg_value(value: Any) -> str:
    if isinstance(value, bool):  # YAML reads `fsync: off` as false
        return "on" if value else "off"
    return str(value)


MODE = Axis("mode", "run", convert=_choice(MODES), expected="run or init",
            help="run: measured pgbench runs; init: time pgbench -i itself")
SCALE = Axis("scale", 10, convert=_scale, expected=SCALE_FORMS,
             help="pgbench -s: " + SCALE_FORMS)
# After a bad value parsing goes on with 1 client, not the default 10, so that the checks
# that depend on it (threads, max_connections) add no complaint of their own.
CLIENTS = Axis("clients", 10, convert=_positive, expected="a whole number", placeholder=1,
               help="client connections (-c), per client host")
THREADS = Axis("threads", 1, convert=_positive, expected="a whole number",
               help="pgbench worker threads (-j), at most one per client")
TRANSACTIONS = Axis("transactions", 1000, convert=_positive, expected="a whole number",
                    help="transactions per client (-t), instead of duration")
DURATION = Axis("duration", "60s", convert=_whole_seconds, expected="a duration such as 60s",
                help="seconds of each run (-T), whole seconds")
SCRIPT = Axis("script", "tpcb-like", convert=_script(None), expected="a builtin or a file",
              help="a builtin (" + ", ".join(BUILTINS) + ") or a script file")
QUERY_MODE = Axis("query_mode", "simple", convert=_choice(QUERY_MODES),
                  expected="a pgbench -M mode", help="pgbench -M: " + ", ".join(QUERY_MODES))
OPTIONS = TextList("options", [], help="more pgbench arguments for measured runs, verbatim")
INIT_OPTIONS = TextList("init_options", [], help="more pgbench -i arguments, verbatim")
INIT_STEPS_FIELD = Text("init_steps", "", help=f"pgbench -I steps, letters of {INIT_STEPS}")
LOG_SAMPLING = Number("log_sampling", 1.0,
                      help="fraction of transactions in the latency log (--sampling-rate)")
CHECKPOINT = Boolean("checkpoint", True, help="CHECKPOINT after every measured run")
PG_BIN = Text("pg_bin", "", help="bin directory of the PostgreSQL to use (default: found)")
# Read by _cluster, key by key: each setting is checked against what volbench sets itself.
SETTINGS = TextMap("settings", None, help="postgresql.conf settings of the throwaway cluster")
FIELDS: tuple[Field[Any], ...] = (
    MODE, SCALE, CLIENTS, THREADS, TRANSACTIONS, DURATION, SCRIPT, QUERY_MODE, OPTIONS,
    INIT_OPTIONS, INIT_STEPS_FIELD, LOG_SAMPLING, CHECKPOINT, PG_BIN, SETTINGS,
    *pgbench_hosts.FIELDS)


def _cluster(r: Reader, max_clients: int) -> postgres.ClusterConfig:
    sr = r.sub(SETTINGS.name, {})
    user: dict[str, str] = {}
    for key, value in sr.data.items():
        problem = postgres.setting_problem(str(key))
        if problem:
            sr.problem(str(key), problem, "remove it")
        elif value is None or isinstance(value, dict | list):
            sr.problem(str(key), "expected one value such as 256MB, on or 200")
        elif why := postgres.value_problem(str(key), _pg_value(value)):
            sr.problem(str(key), why, "use a name or a relative path, or remove it")
        else:
            user[str(key)] = _pg_value(value)
    # Every client holds a connection; a few more for volbench's psql and pgbench's own.
    need = max_clients + 10
    if "max_connections" not in user:
        user["max_connections"] = str(max(100, need))
    elif not user["max_connections"].isdigit() or int(user["max_connections"]) < need:
        sr.problem("max_connections", f"must be at least {need} for {max_clients} clients",
                   "raise it or leave it out (volbench then sets it)")
    return postgres.make_config(user, _pg_bin(r))


def _pg_bin(r: Reader) -> str:
    """The explicit installation (`pg_bin: DIR`), absolute; "" = let pgfind search."""
    text = r.get(PG_BIN)
    if not text:
        return ""
    path = Path(text).expanduser().absolute()
    if not path.is_dir():
        r.problem("pg_bin", f"{path} is not a directory",
                  "give the bin directory of a PostgreSQL installation, or leave pg_bin out")
    elif lacking := pgfind.missing_programs(path):
        r.problem("pg_bin", f"{path} has no {', '.join(lacking)}",
                  "give the directory holding " + ", ".join(pgfind.PROGRAMS))
    return str(path)


def _length(r: Reader, matrix: dict[str, tuple[Scalar, ...]]) -> None:
    """-T seconds (duration) or -t transactions per client, never both."""
    if r.has("transactions"):
        if r.has("duration"):
            r.problem("transactions", "cannot be combined with duration",
                      "give duration (pgbench -T) or transactions per client (-t), not both")
            r.raw("duration")
        matrix["transactions"] = r.get(TRANSACTIONS)
    else:
        matrix["duration"] = r.get(DURATION)


def _check_lists(r: Reader, options: list[str], init_steps: str, log_sampling: float) -> None:
    for i, option in enumerate(options):
        if option.split("=")[0] in MANAGED:
            r.problem(f"options[{i}]", f"{option} is set by volbench",
                      "use the workload's fields (scale, clients, …) instead")
    bad = sorted(set(init_steps) - set(INIT_STEPS))
    if bad:
        r.problem("init_steps", f"unknown init steps {''.join(bad)}",
                  f"use letters of {INIT_STEPS} (pgbench -I)")
    if not 0 < log_sampling <= 1:
        r.problem("log_sampling", f"must be a fraction above 0 and at most 1, got {log_sampling}")


def parse(r: Reader, name: str) -> PgbenchSpec:
    matrix: dict[str, tuple[Scalar, ...]] = {
        f.name: r.get(f) for f in (MODE, SCALE, CLIENTS, THREADS)}
    _length(r, matrix)
    # Script files are taken from the experiment file's folder.
    matrix["script"] = r.get(SCRIPT.converted_by(_script(r.base)))
    if r.has("query_mode"):
        matrix["query_mode"] = r.get(QUERY_MODE)
    clients = [int(c) for c in matrix["clients"]]
    if min(int(t) for t in matrix["threads"]) > max(clients):
        r.problem("threads", "every value exceeds every clients value",
                  "pgbench runs at most one thread per client")
    options = r.get(OPTIONS)
    init_options = r.get(INIT_OPTIONS)
    init_steps = r.get(INIT_STEPS_FIELD)
    log_sampling = r.get(LOG_SAMPLING)
    _check_lists(r, [*options, *init_options], init_steps, log_sampling)
    clients_from, listen = pgbench_hosts.parse_fields(r, [str(m) for m in matrix["mode"]])
    load = loadspec.parse(r, tuple(PGBENCH_SLA_STATS))
    if load is not None:
        matrix["load"] = load.values()
        if clients_from:
            r.problem("load", "a load curve from several client hosts is not supported yet",
                      "remove clients_from: or load:")
    # `clients` is per host: the server holds every host's connections.
    per_server = max(clients) * max(1, len(clients_from))
    spec = PgbenchSpec(name, "pgbench", matrix, cluster=_cluster(r, per_server),
                       init_steps=init_steps, init_options=tuple(init_options),
                       options=tuple(options), log_sampling=log_sampling,
                       checkpoint=r.get(CHECKPOINT), clients_from=clients_from,
                       listen=listen, where=r.path, load=load)
    r.finish()
    return spec


def cases(spec: PgbenchSpec) -> list[dict[str, Scalar]]:
    """The matrix; init cases keep only the scale, and no case has more threads than clients."""
    seen: dict[str, dict[str, Scalar]] = {}
    for case in spec.cases():
        if case["mode"] == "init":
            case = {k: v for k, v in case.items() if k not in RUN_ONLY}
        elif int(case["threads"]) > int(case["clients"]):
            continue
        seen.setdefault(json.dumps(case, sort_keys=True), case)
    return list(seen.values())


# -- commands ---------------------------------------------------------------------------

def database(spec: PgbenchSpec, params: Params) -> str:
    """One database per mode and scale (and init variant), so cases never share tables."""
    name = f"{'init' if params['mode'] == 'init' else 'bench'}_s{params['scale']}"
    if spec.init_steps or spec.init_options:
        name += "_" + digest([spec.init_steps, list(spec.init_options)])[:6]
    return name


def _conn(ctx: RunContext) -> list[str]:
    s = ctx.service
    return ["-h", s.get("host", "<socket-dir>"), "-p", s.get("port", "<port>"),
            "-U", s.get("user", postgres.PG_USER)]


def _program(ctx: RunContext, name: str) -> str:
    """psql or pgbench of the server's own installation (same version as the server);
    the bare name where no server runs yet (`volbench plan`)."""
    bindir = ctx.service.get("bindir")
    return str(Path(bindir) / name) if bindir else name


def _psql(ctx: RunContext, db: str) -> list[str]:
    return [_program(ctx, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *_conn(ctx), "-d", db]


def _init_args(spec: PgbenchSpec, params: Params) -> list[str]:
    steps = ["-I", spec.init_steps] if spec.init_steps else []
    return ["-i", "-s", str(params["scale"]), *steps, *spec.init_options]


def _init_timeout(params: Params) -> float:
    return 600.0 + 30.0 * int(params["scale"])


def _size_file(ctx: RunContext, db: str) -> Path:
    return Path(ctx.service.get("workdir", str(ctx.rundir))) / f"dbsize-{db}.txt"


def _facts(ctx: RunContext) -> dict[str, Path]:
    facts = ctx.service.get("facts")
    return {"facts.json": Path(facts)} if facts else {}


def setup_key(spec: PgbenchSpec, params: Params) -> str:
    return f"{service_key(spec, params)}/{database(spec, params)}"


def service_key(spec: PgbenchSpec, params: Params) -> str:
    if spec.clients_from:
        return spec.cluster.key + pgbench_hosts.service_suffix(spec.clients_from, spec.listen)
    return spec.cluster.key


def setup(spec: PgbenchSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """A fresh database; for `run`, initialised, checkpointed and its size written down.

    The clients do no I/O on the target, so they stay out of its cgroup; the server,
    which does, runs inside it: init on a throttled disk is as slow as it would be.
    """
    db = database(spec, params)
    steps = [Invocation((*_psql(ctx, "postgres"), "-c", f'DROP DATABASE IF EXISTS "{db}"',
                         "-c", f'CREATE DATABASE "{db}"'), timeout=300, throttled=False)]
    if params["mode"] == "run":
        steps.append(Invocation((_program(ctx, "pgbench"), *_conn(ctx),
                                 *_init_args(spec, params), db),
                                timeout=_init_timeout(params), throttled=False))
        steps.append(Invocation(
            (*_psql(ctx, db), "-At", "-c", "CHECKPOINT",
             "-c", "SELECT pg_database_size(current_database())", "-o", str(_size_file(ctx, db))),
            timeout=_init_timeout(params), throttled=False))
    return steps


def command(spec: PgbenchSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured pgbench. Like setup, the client stays out of the target's cgroup: the
    server already runs in it, and the cgroup's I/O counts then show the server's alone."""
    db = database(spec, params)
    if spec.clients_from and params["mode"] == "run":
        return _from_hosts(spec, params, ctx)
    if params["mode"] == "init":
        return Invocation((_program(ctx, "pgbench"), *_conn(ctx), *_init_args(spec, params), db),
                          timeout=_init_timeout(params), cwd=ctx.rundir, outputs=_facts(ctx),
                          throttled=False)
    argv = [_program(ctx, "pgbench"), *_conn(ctx), "-c", str(params["clients"]),
            "-j", str(params["threads"])]
    if "duration" in params:
        argv += ["-T", f"{params['duration']:.0f}"]
        timeout = 3 * float(params["duration"]) + 300
    else:
        argv += ["-t", str(params["transactions"])]
        timeout = max(3600.0, int(params["clients"]) * int(params["transactions"]) * 0.05)
    argv += rate_args(params, ctx.offered)
    argv += ["-P", "1", "-l", f"--log-prefix={ctx.service.get('log_prefix', TXLOG)}"]
    if spec.log_sampling < 1:
        argv.append(f"--sampling-rate={spec.log_sampling:g}")
    script = str(params["script"])
    argv += ["-b", script] if script in BUILTINS else ["-f", script]
    if "query_mode" in params:
        argv += ["-M", str(params["query_mode"])]
    argv += [*spec.options, db]
    return Invocation(tuple(argv), timeout=timeout, cwd=ctx.rundir,
                      outputs={**_facts(ctx), "dbsize.txt": _size_file(ctx, db)},
                      output_globs=(f"{TXLOG}.*",), throttled=False)


def rate_args(params: Params, offered: float | None) -> list[str]:
    """pgbench --rate for a load-curve step: transactions are scheduled as a Poisson
    process at that total rate (pgbench's own throttling), and latency is counted from
    each transaction's scheduled start, waiting for a busy client included."""
    step = params.get("load")
    if step is None or step == SATURATION:
        return []
    if offered is None:  # `volbench plan`: resolved when the step runs
        return ["--rate", f"<{loadspec.describe_step(step)}>"]
    return ["--rate", f"{offered:.3f}"]


def _from_hosts(spec: PgbenchSpec, params: Params, ctx: RunContext) -> Invocation:
    """The driver that runs pgbench on every client host at once (pgbench_hosts.py).

    The clients run with -n: the vacuum and history truncation each pgbench does at its
    start are done once here first, so no host empties the history under the others."""
    db = database(spec, params)
    no_vacuum = any(o in ("-n", "--no-vacuum") for o in spec.options)
    client = replace(spec, clients_from=(), options=spec.options if no_vacuum
                     else ("-n", *spec.options))
    sql = ["VACUUM pgbench_branches", "VACUUM pgbench_tellers", "TRUNCATE pgbench_history"]
    if any(o in ("-v", "--vacuum-all") for o in spec.options):
        sql.append("VACUUM pgbench_accounts")
    prepare = [] if no_vacuum else [[*_psql(ctx, db), *(a for q in sql for a in ("-c", q))]]
    count = None
    if not no_vacuum and params["script"] in pgbench_hosts.HISTORY_SCRIPTS \
            and not any(o.startswith(("-b", "--builtin", "-f", "--file", "-S"))
                        for o in spec.options):
        count = [*_psql(ctx, db), "-At", "-c", "SELECT count(*) FROM pgbench_history"]
    if pgbench_hosts.CLIENTS not in ctx.service:  # `volbench plan`: what each host runs
        return command(client, params, replace(ctx, service={**ctx.service,
                                                              "host": "<server-address>"}))
    # Client hosts run their own pgbench from their PATH: this machine's bindir may not
    # exist there (a remote host), and the server's version is recorded per host anyway.
    remote = replace(ctx, service={k: v for k, v in ctx.service.items() if k != "bindir"})
    return pgbench_hosts.command(remote, lambda c: command(client, params, c), prepare, count)


def after(spec: PgbenchSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    if not spec.checkpoint:
        return []
    return [Invocation((*_psql(ctx, database(spec, params)), "-c", "CHECKPOINT"),
                       timeout=1800, throttled=False)]


@contextmanager
def open_service(spec: PgbenchSpec, params: Params, ctx: ServiceContext
                 ) -> Iterator[ServiceHandle]:
    if spec.clients_from:
        with pgclients.pgbench_clients(spec.cluster, spec.client_hosts, spec.listen,
                                       ctx) as handle:
            yield handle
        return
    with postgres.cluster(spec.cluster, ctx.scope, ctx.built, ctx.workdir) as server:
        yield ServiceHandle(server.values(), dict(server.info))


# -- results ----------------------------------------------------------------------------

def parse_output(spec: PgbenchSpec, params: Params, run: RunOutput) -> Parsed:
    outputs = run.outputs
    if run.exit_code != 0:
        # Only the multi-host driver's results are read after a failure (partial_results).
        raise ParseError("pgbench", "a failed run", f"exit code {run.exit_code}")
    if spec.clients_from and params.get("mode") != "init":
        aggregate = any(o.startswith("--aggregate-interval") for o in spec.options)
        parsed = pgbench_hosts.parse_output(outputs, spec.log_sampling, aggregate)
        return _with_cache(parsed, outputs, ("host", "all"))
    if params.get("mode") == "init":
        return parsing.parse_init(outputs.get("stderr", ""), "pgbench -i stderr", run.elapsed)
    report = parsing.parse_run(outputs.get("stdout", ""), "pgbench stdout")
    series = parsing.parse_progress(outputs.get("stderr", ""))
    logs = [text for name, text in sorted(outputs.items()) if name.startswith(TXLOG + ".")]
    metrics = list(report.metrics)
    histograms: tuple[Histogram, ...] = ()
    if any(o.startswith("--aggregate-interval") for o in spec.options):
        series = series or tuple(s for text in logs[:1] for s in parsing.parse_aggregate_log(text))
    else:
        latency, histograms = parsing.latency_metrics(parsing.parse_txlogs(logs), spec.log_sampling)
        metrics += latency
    return _with_cache(Parsed(tuple(metrics), series, histograms), outputs, None)


def _with_cache(parsed: Parsed, outputs: Mapping[str, str], tag: tuple[str, str] | None
                ) -> Parsed:
    """db_size against RAM, and the `cached` note on the run's tps and latency_avg
    (untagged, or the host=all totals)."""
    cache, note = parsing.cache_metrics(outputs.get("facts.json"), outputs.get("dbsize.txt"))
    want = {} if tag is None else dict([tag])
    metrics = [replace(m, note="; ".join(filter(None, (m.note, note))))
               if note and m.name in ("tps", "latency_avg") and dict(m.tags) == want else m
               for m in parsed.metrics]
    return Parsed(tuple(metrics + cache), parsed.series, parsed.histograms)


def estimate(spec: PgbenchSpec, params: Params) -> float:
    if params.get("mode") == "init":
        return 2.0 + INIT_S_PER_SCALE * int(params["scale"])
    if "duration" in params:
        return float(params["duration"]) + 1.5
    return int(params["clients"]) * int(params["transactions"]) / 500 + 1.5


def working_set(spec: PgbenchSpec, params: Params) -> int | None:
    return database_bytes(int(params["scale"]))


def programs(spec: PgbenchSpec) -> dict[str, str]:
    """The server's and pgbench's versions of the installation this workload uses."""
    install, version = postgres.find_install(spec.cluster)
    return {"postgres": version, "pgbench": pgfind.version(install.program("pgbench"))}


KIND = WorkloadKind(
    "pgbench", "pgbench on a throwaway PostgreSQL cluster on the target "
               "(mode × scale × clients × threads × duration × script)",
    parse, cases, command, parse_output, estimate, setup=setup, setup_key=setup_key,
    after=after, service=open_service, service_key=service_key,
    programs=programs, needs_root=True,
    working_set=working_set, partial_results=True, fields=FIELDS,
)
