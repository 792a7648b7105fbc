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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from volbench.config import loadspec
from volbench.config.userfile import UserFileError
from volbench.core.errors import ExperimentError, ParseError, Problem
from volbench.core.model import Histogram, Params, Parsed, digest
from volbench.services import pgclients, postgres
from volbench.stats.curve import SATURATION
from volbench.system import sandbox
from volbench.system.host import pgfind
from volbench.workloads import pgbench_hosts, pgbench_options, pgbench_scripts
from volbench.workloads import pgbench_parse as parsing
from volbench.workloads.base import (
    Invocation,
    RunContext,
    RunOutput,
    ServiceContext,
    ServiceHandle,
    WorkloadKind,
)

# The experiment-file side (fields, checks, the case matrix) lives in pgbench_spec; the
# names other modules reach through `pgbench.` are re-exported here.
from volbench.workloads.pgbench_spec import BUILTINS, FIELDS, INIT_S_PER_SCALE, TXLOG, parse
from volbench.workloads.pgbench_spec import PgbenchSpec as PgbenchSpec
from volbench.workloads.pgbench_spec import cases as cases
from volbench.workloads.pgbench_spec import database_bytes as database_bytes

# -- commands ---------------------------------------------------------------------------

def database(spec: PgbenchSpec, params: Params) -> str:
    """One database per mode and scale (and init variant), so cases never share tables."""
    name = f"{'init' if params['mode'] == 'init' else 'bench'}_s{params['scale']}"
    if spec.init_steps or spec.init_options:
        name += "_" + digest([spec.init_steps, list(spec.init_options)])[:6]
    return name


def _conn(ctx: RunContext, *, bench: bool = False) -> list[str]:
    """Connection options; `bench`: as the role the user's SQL runs as (pgrole), not the
    superuser volbench's own statements need."""
    s = ctx.service
    user = s.get("user", postgres.PG_USER)
    return ["-h", s.get("host", "<socket-dir>"), "-p", s.get("port", "<port>"),
            "-U", s.get("bench_user", user) if bench else user]


def _program(ctx: RunContext, name: str) -> str:
    """psql or pgbench of the server's own installation (same version as the server);
    the bare name where no server runs yet (`volbench plan`)."""
    bindir = ctx.service.get("bindir")
    return str(Path(bindir) / name) if bindir else name


def _psql(ctx: RunContext, db: str, *, bench: bool = False) -> list[str]:
    """psql as the superuser, which connects only to `postgres`; or, with `bench`, as the
    benchmark role, which may connect to the databases it owns.

    Why the superuser never enters a benchmark database: the role owns everything in it
    and the scripts ran there as it. A TRUNCATE trigger it made, a view, or a function
    put before pg_catalog (ALTER DATABASE … SET search_path, which an owner may do) runs
    as whoever runs the statement: as the superuser, `COPY … TO PROGRAM` ran as postgres
    (issue 34's audit). CHECKPOINT and pg_database_size() need no session in the database;
    VACUUM, TRUNCATE and counting rows are the owner's to do."""
    if db != "postgres" and not bench:
        raise ValueError(f"volbench's superuser statements run in postgres, not {db}")
    return [_program(ctx, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
            *_conn(ctx, bench=bench), "-d", db]


def _init_args(spec: PgbenchSpec, params: Params) -> list[str]:
    steps = ["-I", spec.init_steps] if spec.init_steps else []
    options, _ = pgbench_options.parse(spec.init_options)
    return ["-i", "-s", str(params["scale"]), *steps,
            *pgbench_options.rendered(options, lambda path: path)]


@dataclass
class _Copies:
    """The scripts of one pgbench run, read and checked now, copied into its run
    directory by the runner and read back and checked again right before pgbench starts
    (Invocation.files, Invocation.check): pgbench reads the copy that was checked, not a
    file that may have been swapped since the experiment was read."""

    folder: Path
    files: dict[Path, str] = field(default_factory=dict)

    def __call__(self, path: str) -> str:
        copy = self.folder / pgbench_scripts.copy_name(len(self.files) + 1, path)
        try:
            self.files[copy] = pgbench_scripts.read(Path(path))
        except (UserFileError, ValueError) as exc:
            raise ExperimentError([Problem(path, str(exc))], "pgbench script") from None
        return str(copy)


def _check_copy(copy: Path, text: str) -> str | None:
    return pgbench_scripts.problem(text, str(copy))


def _sandboxed(argv: list[str], ctx: RunContext, timeout: float, copies: _Copies | None = None,
               **more: Any) -> Invocation:
    """pgbench as the run's own user, in a sandbox that can write only its run directory
    (system/sandbox.py); its scripts are the checked copies."""
    return Invocation(tuple(argv), timeout=timeout, cwd=ctx.rundir, throttled=False,
                      sandboxed=True, files=dict(copies.files) if copies else {},
                      check=_check_copy, **more)


def _init_timeout(params: Params) -> float:
    return 600.0 + 30.0 * int(params["scale"])


def _size_file(ctx: RunContext, db: str) -> Path:
    return Path(ctx.service.get("workdir", str(ctx.rundir))) / f"dbsize-{db}.txt"


def _facts(ctx: RunContext) -> dict[str, Path]:
    facts = ctx.service.get("facts")
    return {"facts.json": Path(facts)} if facts else {}


def setup_key(spec: PgbenchSpec, params: Params) -> str:
    """Cases with equal keys share one untimed setup per target (one laid-out file, one
    initialised database)."""
    return f"{service_key(spec, params)}/{database(spec, params)}"


def service_key(spec: PgbenchSpec, params: Params) -> str:
    """Runs with equal keys share one PostgreSQL cluster (and, with clients_from, one set of
    client hosts)."""
    if spec.clients_from:
        return spec.cluster.key + pgbench_hosts.service_suffix(spec.clients_from, spec.listen)
    return spec.cluster.key


def setup(spec: PgbenchSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """A fresh database; for `run`, initialised, checkpointed and its size written down.

    The clients do no I/O on the target, so they stay out of its cgroup; the server,
    which does, runs inside it: init on a throttled disk is as slow as it would be.
    """
    db = database(spec, params)
    owner = ctx.service.get("bench_user", ctx.service.get("user", postgres.PG_USER))
    steps = [Invocation((*_psql(ctx, "postgres"), "-c", f'DROP DATABASE IF EXISTS "{db}"',
                         "-c", f'CREATE DATABASE "{db}" OWNER "{owner}"'), timeout=300,
                        throttled=False)]
    if params["mode"] == "run":
        steps.append(_sandboxed([_program(ctx, "pgbench"), *_conn(ctx, bench=True),
                                 *_init_args(spec, params), db], ctx, _init_timeout(params)))
        steps.append(Invocation(
            (*_psql(ctx, "postgres"), "-At", "-c", "CHECKPOINT",
             "-c", f"SELECT pg_catalog.pg_database_size('{db}')", "-o",
             str(_size_file(ctx, db))),
            timeout=_init_timeout(params), throttled=False))
    return steps


def command(spec: PgbenchSpec, params: Params, ctx: RunContext) -> Invocation:
    """The measured pgbench. Like setup, the client stays out of the target's cgroup: the
    server already runs in it, and the cgroup's I/O counts then show the server's alone."""
    db = database(spec, params)
    if spec.clients_from and params["mode"] == "run":
        return _from_hosts(spec, params, ctx)
    if params["mode"] == "init":
        return _sandboxed([_program(ctx, "pgbench"), *_conn(ctx, bench=True),
                           *_init_args(spec, params), db], ctx, _init_timeout(params),
                          outputs=_facts(ctx))
    argv = [_program(ctx, "pgbench"), *_conn(ctx, bench=True), "-c", str(params["clients"]),
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
    copies = _Copies(ctx.rundir / "scripts")
    script = str(params["script"])
    argv += ["-b", script] if script in BUILTINS else ["-f", copies(script)]
    if "query_mode" in params:
        argv += ["-M", str(params["query_mode"])]
    options, _ = pgbench_options.parse(spec.options)
    argv += [*pgbench_options.rendered(options, copies), db]
    return _sandboxed(argv, ctx, timeout, copies,
                      outputs={**_facts(ctx), "dbsize.txt": _size_file(ctx, db)},
                      output_globs=(f"{TXLOG}.*",))


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
    given = {o.name for o in pgbench_options.parse(spec.options)[0]}  # as pgbench reads them
    no_vacuum = "no-vacuum" in given
    client = replace(spec, clients_from=(), options=spec.options if no_vacuum
                     else ("-n", *spec.options))
    sql = ["VACUUM pgbench_branches", "VACUUM pgbench_tellers", "TRUNCATE pgbench_history"]
    if "vacuum-all" in given:
        sql.append("VACUUM pgbench_accounts")
    prepare = [] if no_vacuum else [[*_psql(ctx, db, bench=True),
                                     *(a for q in sql for a in ("-c", q))]]
    count = None
    if not no_vacuum and params["script"] in pgbench_hosts.HISTORY_SCRIPTS \
            and not given & {"builtin", "file", "select-only"}:
        count = [*_psql(ctx, db, bench=True), "-At", "-c",
                 "SELECT count(*) FROM pgbench_history"]
    if pgbench_hosts.CLIENTS not in ctx.service:  # `volbench plan`: what each host runs
        return command(client, params, replace(ctx, service={**ctx.service,
                                                              "host": "<server-address>"}))
    # Client hosts run their own pgbench from their PATH: this machine's bindir may not
    # exist there (a remote host), and the server's version is recorded per host anyway.
    remote = replace(ctx, service={k: v for k, v in ctx.service.items() if k != "bindir"})
    return pgbench_hosts.command(remote, lambda c: command(client, params, c), prepare, count)


def after(spec: PgbenchSpec, params: Params, ctx: RunContext) -> list[Invocation]:
    """A CHECKPOINT after each measured run when the spec asks for one (untimed), so the next
    run does not pay for this one's dirty buffers."""
    if not spec.checkpoint:
        return []
    return [Invocation((*_psql(ctx, "postgres"), "-c", "CHECKPOINT"),
                       timeout=1800, throttled=False)]


@contextmanager
def open_service(spec: PgbenchSpec, params: Params, ctx: ServiceContext
                 ) -> Iterator[ServiceHandle]:
    """Start the cluster (and the client hosts' access) for these runs and yield how to reach
    it; all it starts is journaled, and stopped when the block ends."""
    if spec.clients_from:
        with pgclients.pgbench_clients(spec.cluster, spec.client_hosts, spec.listen,
                                       ctx) as handle:
            yield handle
        return
    with postgres.cluster(spec.cluster, ctx.scope, ctx.built, ctx.workdir,
                          sandbox_user=ctx.sandbox_user) as server:
        yield ServiceHandle(server.values(), dict(server.info), server.crash_hooks)


# -- results ----------------------------------------------------------------------------

def parse_output(spec: PgbenchSpec, params: Params, run: RunOutput) -> Parsed:
    """The metrics (and series, histograms) of a finished run, from its outputs; output that is
    not what the tool writes is a ParseError naming the tool."""
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


def run_seconds(spec: PgbenchSpec, params: Params) -> float | None:
    """The measured seconds of a run (-T), None for -t (as long as the transactions take)."""
    return float(params["duration"]) if "duration" in params else None


def fault_problem(spec: PgbenchSpec) -> str | None:
    """Faults fire into measured runs of known length on this machine: phases come from
    pgbench's progress (-P 1), and the schedule needs the run to last."""
    if spec.clients_from:
        return ("faults on pgbench from several client hosts are not supported: the "
                "progress comes from each host's clock; remove clients_from: or faults:")
    if "init" in spec.matrix.get("mode", ()):
        return "faults fire into measured runs (mode: run), not into pgbench -i (mode: init)"
    if "transactions" in spec.matrix:
        return ("a faulted run needs a known length: give duration: (pgbench -T) instead "
                "of transactions:")
    return None


def estimate(spec: PgbenchSpec, params: Params) -> float:
    """Expected seconds of one run of these params, for `volbench plan` and the progress ETA;
    reads nothing from the machine."""
    if params.get("mode") == "init":
        return 2.0 + INIT_S_PER_SCALE * int(params["scale"])
    if "duration" in params:
        return float(params["duration"]) + 1.5
    return int(params["clients"]) * int(params["transactions"]) / 500 + 1.5


def working_set(spec: PgbenchSpec, params: Params) -> int | None:
    """Bytes a run of these params works on (None when unknown); recorded with each run and
    named when a run fails for lack of space."""
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
    working_set=working_set, partial_results=True, fields=FIELDS, sandboxed=True,
    tools=sandbox.PROGRAMS, run_seconds=run_seconds, fault_problem=fault_problem,
)
