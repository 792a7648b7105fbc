"""pgbench from several client hosts against one server (`clients_from: [a, b]`).

The server is the run's target's throwaway cluster, listening on TCP for the client
hosts only (services/pgclients.py). A measured run is one process,
`python -m volbench.jobs.multipgbench SPEC.json`, which starts pgbench on every
host at once (`clients` is per host) and writes one JSON file with each host's exit
code, stdout, stderr and log file names; the per-transaction logs are separate raw
outputs (`pgbench_txlog-N-HOST.*`).

Before the clients start, the driver does once, from this machine, what each pgbench
would otherwise do at its start (VACUUM the branches and tellers, TRUNCATE
pgbench_history) and runs the clients with `-n`: several pgbench truncating the
history table at their own start would lock and empty it under the others. For the
builtin TPC-B-like and simple-update scripts, which add one history row per
transaction, the driver counts the rows afterwards: the server's own count of the
transactions every host committed (`server_transactions`).

Results: every metric tagged `host=NAME`; totals tagged `host=all`: tps and counts
summed, latency average weighted by transactions, stddev pooled, percentiles from the
merged latency histograms, series summed per second. A host that failed or could not
connect is named in the error and the others' numbers are kept (`LostHosts.partial`,
without `host=all`: without every host the sum is not the experiment's total).
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import math
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader, did_you_mean
from volbench.config.spec import Field, Text, TextList
from volbench.core.errors import ParseError, Problem
from volbench.core.model import Histogram, Metric, Parsed, Series, digest
from volbench.remote.hosts import HostSpec
from volbench.services.keys import PGBENCH_CLIENTS as CLIENTS
from volbench.workloads import pgbench_parse as parsing
from volbench.workloads.base import Invocation, LostHosts, RunContext, WorkloadSpec

SPEC = "multipgbench-spec.json"
RESULT = "multipgbench.json"
TXLOG = "pgbench_txlog"
# Summed over hosts for host=all (per script and statement where pgbench splits them).
ADDITIVE = (
    "tps",
    "tps_including_connections",
    "transactions",
    "failed_transactions",
    "skipped_transactions",
    "late_transactions",
    "retried_transactions",
    "retries",
    "statement_failures",
)
# Averages weighted by each host's transactions.
WEIGHTED = ("latency_avg", "schedule_lag_avg", "statement_latency", "commit_latency",
            "connection_time_avg")
LATEST = ("initial_connection_time", "schedule_lag_max")
# The scripts that insert one pgbench_history row per committed transaction.
HISTORY_SCRIPTS = ("tpcb-like", "simple-update")


# -- the experiment file -------------------------------------------------------------------


CLIENTS_FROM = TextList("clients_from", [], help="hosts (of the hosts: section) the measured "
                                                   "runs come from, at the same moment")
LISTEN = Text("listen", "", help="with clients_from: the one address of this machine the "
                                 "hosts connect to")
FIELDS: tuple[Field[Any], ...] = (CLIENTS_FROM, LISTEN)


def parse_fields(r: Reader, modes: Sequence[str]) -> tuple[tuple[str, ...], str | None]:
    """`clients_from` (host names) and `listen` (an address of this machine, optional)."""
    names = tuple(r.get(CLIENTS_FROM))
    listen = r.get(LISTEN) or None
    if r.has("clients_from") and not names:
        r.problem("clients_from", "no hosts", "name hosts of the hosts: section, or remove it")
    for dup in sorted({n for n in names if names.count(n) > 1}):
        r.problem("clients_from", f"host '{dup}' is listed twice", "list every host once")
    if names and "init" in modes:
        r.problem(
            "clients_from",
            "a timed init (mode: init) is one pgbench -i on this "
            "machine; it cannot come from several hosts",
            "put mode: init in a workload without clients_from",
        )
    if listen is not None:
        if not names:
            r.problem("listen", "only means something with clients_from", "remove it")
        try:
            if ipaddress.ip_address(listen).is_unspecified:
                r.problem(
                    "listen",
                    f"{listen} would listen on every address",
                    "give one address of this machine that the hosts reach",
                )
        except ValueError:
            r.problem(
                "listen",
                f"'{listen}' is not an IP address",
                "give an address of this machine, e.g. 10.213.1.1",
            )
    return names, listen


def bind_client_hosts(
    workloads: Sequence[WorkloadSpec], hosts: Sequence[HostSpec], problems: list[Problem]
) -> list[WorkloadSpec]:
    """Resolve each pgbench workload's `clients_from` names against the `hosts:` section."""
    by_name = {h.name: h for h in hosts}
    out: list[WorkloadSpec] = []
    for spec in workloads:
        names: tuple[str, ...] = getattr(spec, "clients_from", ())
        if not names:
            out.append(spec)
            continue
        where = getattr(spec, "where", "") or spec.name
        for missing in (n for n in names if n not in by_name):
            fix = did_you_mean(missing, list(by_name)) or (
                f"hosts are: {', '.join(by_name)}" if by_name else "add a hosts: section listing it"
            )
            problems.append(
                Problem(f"{where}.clients_from", f"'{missing}' is not a host name", fix)
            )
        # A PgbenchSpec (not imported: pgbench.py imports this module).
        pgbench_spec: Any = spec
        resolved = tuple(by_name[n] for n in names if n in by_name)
        out.append(replace(pgbench_spec, client_hosts=resolved))
    return out


def service_suffix(names: Sequence[str], listen: str | None) -> str:
    """Clusters for other client hosts (or none) are other services: another pg_hba."""
    return f"-from-{digest([list(names), listen])[:8]}"


# -- the measured run ----------------------------------------------------------------------


def clients(ctx: RunContext) -> list[dict[str, Any]]:
    """The client hosts the service set up for this run; none is a ParseError (the service did
    not start TCP access)."""
    raw = ctx.service.get(CLIENTS)
    if not raw:
        raise ParseError(
            "pgbench", "service", "no client hosts: the service did not start TCP access (internal)"
        )
    return list(json.loads(raw))


def _uploads(argv: Sequence[str], copies: Collection[Path] = ()) -> list[str]:
    """Local script files the hosts need (`-f PATH[@weight]`): copied to remote hosts.
    `copies`: the scripts' checked copies, written into the run directory only when the
    driver is about to start."""
    found = []
    for flag, value in itertools.pairwise(argv):
        if flag in ("-f", "--file"):
            path = value.rsplit("@", 1)[0] if "@" in value else value
            if Path(path) in copies or Path(path).is_file():
                found.append(path)
    return found


def command(
    ctx: RunContext,
    client: Callable[[RunContext], Invocation],
    prepare: Sequence[Sequence[str]],
    count: Sequence[str] | None,
) -> Invocation:
    """The driver invocation. `client` builds one host's pgbench for a context whose
    service values name that host's server address and log prefix; `prepare` and
    `count` are psql commands run on this machine before and after (untimed)."""
    rundir = ctx.rundir
    hosts = []
    first: Invocation | None = None
    for i, entry in enumerate(clients(ctx), start=1):
        prefix = f"{TXLOG}-{i}-{entry['name']}"
        inv = client(
            replace(ctx, service={**ctx.service, "host": entry["server"], "log_prefix": prefix})
        )
        first = first or inv
        hosts.append(
            {**entry, "argv": list(inv.argv), "log_prefix": prefix,
             "upload": _uploads(inv.argv, inv.files)}
        )
    assert first is not None
    spec = {
        "rundir": str(rundir),
        "out": str(rundir / RESULT),
        "timeout": first.timeout,
        "prepare": [list(a) for a in prepare],
        "count": list(count) if count else None,
        "hosts": hosts,
    }
    path = rundir / SPEC
    outputs = {k: v for k, v in first.outputs.items()}
    return Invocation(
        (sys.executable, "-m", "volbench.jobs.multipgbench", str(path)),
        timeout=first.timeout + 120 + 30 * len(hosts),
        cwd=rundir,
        outputs={**outputs, RESULT: rundir / RESULT},
        output_globs=(f"{TXLOG}-*",),
        throttled=False,
        # The scripts' checked copies, which the driver uploads to the hosts.
        files={**first.files, path: json.dumps(spec, indent=1)},
        check=lambda copy, text: first.check(copy, text)
        if first.check is not None and copy in first.files else None,
    )


# -- results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostRun:
    """One host's parsed output (untagged) and its load window on this machine's clock."""

    metrics: tuple[Metric, ...]
    series: tuple[Series, ...]
    log: parsing.TxLog | None
    window: tuple[float, float] | None


def _failure(host: Mapping[str, Any]) -> str | None:
    """Why a host gave no results, or None."""
    if host.get("error"):
        return str(host["error"])
    if host.get("timed_out"):
        return "pgbench did not finish in time and was killed"
    code = host.get("exit_code")
    if code == 0:
        return None
    text = f"{host.get('stderr', '')}\n{host.get('stdout', '')}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line or "FATAL" in line]
    # Not pgbench's own message (ip netns exec, ssh, sh): its last line says why.
    detail = errors[0].split("error: ", 1)[-1] if errors else (lines or ["no output"])[-1]
    if "aborted" in text:
        detail = f"the run was aborted (clients failed): {detail}"
    elif "no pg_hba.conf entry" in detail:
        detail = (
            f"the server refused the host's address: {detail} (the host connects "
            "from another address than volbench admitted; check its address in hosts:)"
        )
    elif "connection to server" in detail:
        detail = (
            f"pgbench could not connect: {detail} (check the host's route to the "
            "server and that its address is the one pg_hba.conf admits)"
        )
    return f"pgbench exited with code {code}: {detail}"


def log_window(texts: Sequence[str], offset: float) -> tuple[float, float] | None:
    """(first transaction's start, last one's end) of -l logs, on this machine's clock
    (`offset` = host clock minus this machine's)."""
    first, last = math.inf, -math.inf
    for text in texts:
        for line in text.splitlines():
            cols = line.split()
            if len(cols) < 6 or not (cols[2].isdigit() and cols[4].isdigit() and cols[5].isdigit()):
                continue
            end = int(cols[4]) + int(cols[5]) / 1e6
            first = min(first, end - int(cols[2]) / 1e6)
            last = max(last, end)
    return (first - offset, last - offset) if first < math.inf else None


def _host_run(host: Mapping[str, Any], outputs: Mapping[str, str], aggregate: bool) -> HostRun:
    name = str(host["name"])
    report = parsing.parse_run(host.get("stdout", ""), f"host {name}'s stdout")
    series = parsing.parse_progress(host.get("stderr", ""))
    texts = [outputs[f] for f in host.get("logs", []) if f in outputs]
    if aggregate or not texts:
        return HostRun(report.metrics, series, None, None)
    offset = float(host.get("clock", {}).get("offset_s", 0.0))
    return HostRun(report.metrics, series, parsing.parse_txlogs(texts), log_window(texts, offset))


def _tagged(metrics: Sequence[Metric], host: str) -> list[Metric]:
    return [replace(m, tags={**m.tags, "host": host}) for m in metrics]


def _key(m: Metric) -> tuple[str, str]:
    return m.name, json.dumps(dict(m.tags), sort_keys=True)


def _combine(name: str, found: list[tuple[Metric, float]]) -> float | None:
    """One total from each host's value (and its transactions, for weighted averages)."""
    values = [(m.value, tx) for m, tx in found if m.value is not None]
    if len(values) < len(found) or not values:
        return None
    if name in ADDITIVE:
        return sum(v for v, _ in values)
    if name in LATEST:
        return max(v for v, _ in values)
    weight = sum(tx for _, tx in values)
    return sum(v * tx for v, tx in values) / weight if weight else None


def _pooled_stddev(runs: Sequence[HostRun]) -> float | None:
    """The stddev of all transactions together, from each host's mean, stddev and count."""
    parts = []
    for run in runs:
        got = {m.name: m.value for m in run.metrics if not m.tags}
        n, mean, sd = got.get("transactions"), got.get("latency_avg"), got.get("latency_stddev")
        if n is None or mean is None or sd is None:
            return None
        parts.append((n, mean, sd))
    total = sum(n for n, _, _ in parts)
    if not total:
        return None
    mean = sum(n * m for n, m, _ in parts) / total
    return math.sqrt(sum(n * (sd**2 + (m - mean) ** 2) for n, m, sd in parts) / total)


def total_metrics(runs: Sequence[HostRun]) -> list[Metric]:
    """host=all: sums, transaction-weighted averages, the latest connection time."""
    groups: dict[tuple[str, str], list[tuple[Metric, float]]] = {}
    for run in runs:
        tx = {
            json.dumps(
                {k: v for k, v in m.tags.items() if k not in ("statement", "n")}, sort_keys=True
            ): m.value or 0.0
            for m in run.metrics
            if m.name == "transactions"
        }
        for m in run.metrics:
            if m.name in (*ADDITIVE, *WEIGHTED, *LATEST):
                scope = {k: v for k, v in m.tags.items() if k not in ("statement", "n")}
                groups.setdefault(_key(m), []).append(
                    (m, tx.get(json.dumps(scope, sort_keys=True), 0.0))
                )
    out = []
    for (name, _), found in groups.items():
        if len(found) == len(runs):
            m = found[0][0]
            notes = "; ".join(dict.fromkeys(f.note for f, _ in found if f.note))
            out.append(
                Metric(name, _combine(name, found), m.unit, {**m.tags, "host": "all"}, notes)
            )
    stddev = _pooled_stddev(runs)
    if stddev is not None:
        out.append(Metric("latency_stddev", stddev, "s", {"host": "all"}))
    return out


def total_series(runs: Sequence[HostRun]) -> list[Series]:
    """Per-second sums over the seconds every host reported (latency weighted by tps)."""
    by: list[dict[str, dict[float, float]]] = [
        {s.name: dict(s.points) for s in run.series if not s.tags} for run in runs
    ]
    out = []
    for name, unit in (("tps", "tx/s"), ("failed_transactions", "tx")):
        if all(name in b for b in by):
            times = sorted(set.intersection(*(set(b[name]) for b in by)))
            out.append(Series(name, unit, tuple((t, sum(b[name][t] for b in by)) for t in times)))
    if all("tps" in b and "latency_avg" in b for b in by):
        times = sorted(set.intersection(*(set(b["tps"]) & set(b["latency_avg"]) for b in by)))
        points = []
        for t in times:
            weight = sum(b["tps"][t] for b in by)
            if weight > 0:
                points.append((t, sum(b["latency_avg"][t] * b["tps"][t] for b in by) / weight))
        out.append(Series("latency_avg", "s", tuple(points)))
    return [replace(s, tags={"host": "all"}) for s in out]


def merge_logs(logs: Sequence[parsing.TxLog]) -> parsing.TxLog:
    """One transaction log from several hosts' logs: histogram bins added, so percentiles are of
    all their transactions."""
    bins: dict[float, int] = {}
    for log in logs:
        for value, count in log.bins.items():
            bins[value] = bins.get(value, 0) + count
    return parsing.TxLog(
        dict(sorted(bins.items())),
        sum(bins.values()),
        sum(g.unfinished for g in logs),
        any(g.truncated for g in logs),
    )


def _latency(
    log: parsing.TxLog, sampling: float, host: str
) -> tuple[list[Metric], list[Histogram]]:
    metrics, hists = parsing.latency_metrics(log, sampling)
    return _tagged(metrics, host), [replace(h, tags={"host": host}) for h in hists]


def _skew(windows: Sequence[tuple[float, float]], note: str) -> list[Metric]:
    """How far apart the hosts' first (and last) transactions were, on one clock."""
    starts, ends = [w[0] for w in windows], [w[1] for w in windows]
    return [
        Metric("start_skew", max(starts) - min(starts), "s", {"host": "all"}, note),
        Metric("end_skew", max(ends) - min(ends), "s", {"host": "all"}, note),
    ]


def _server_count(data: Mapping[str, Any]) -> list[Metric]:
    rows = [
        line.strip()
        for line in str(data.get("count_output") or "").splitlines()
        if line.strip().isdigit()
    ]
    if not rows:
        return []
    return [
        Metric(
            "server_transactions",
            float(rows[-1]),
            "tx",
            {},
            "rows pgbench_history gained: the server's own count of committed transactions",
        )
    ]


def parse_output(outputs: Mapping[str, str], sampling: float, aggregate: bool) -> Parsed:
    """Per-host and total metrics from the driver's JSON; LostHosts if a host is missing."""
    try:
        data = json.loads(outputs[RESULT])
    except (KeyError, json.JSONDecodeError) as exc:
        raise ParseError("pgbench", RESULT, "the driver wrote no results; see its stderr") from exc
    runs: dict[str, HostRun] = {}
    lost: dict[str, str] = {}
    for host in data["hosts"]:
        name = str(host["name"])
        why = _failure(host)
        if why is None:
            try:
                runs[name] = _host_run(host, outputs, aggregate)
            except ParseError as exc:
                why = exc.detail
        if why is not None:
            lost[name] = why
    metrics: list[Metric] = []
    series: list[Series] = []
    hists: list[Histogram] = []
    for name, run in runs.items():
        metrics += _tagged(run.metrics, name)
        series += [replace(s, tags={**s.tags, "host": name}) for s in run.series]
        if run.log is not None:
            more, hist = _latency(run.log, sampling, name)
            metrics, hists = metrics + more, hists + hist
    metrics += _server_count(data)
    if lost:
        partial = Parsed(tuple(metrics), tuple(series), tuple(hists))
        raise LostHosts("pgbench", "multi-host run", lost, partial)
    metrics += total_metrics(list(runs.values()))
    series += total_series(list(runs.values()))
    logs = [r.log for r in runs.values() if r.log is not None]
    if logs and len(logs) == len(runs):
        more, hist = _latency(merge_logs(logs), sampling, "all")
        metrics, hists = metrics + more, hists + hist
        windows = [r.window for r in runs.values() if r.window is not None]
        if len(windows) > 1:
            note = "from sampled transactions" if sampling < 1 else ""
            metrics += _skew(windows, note)
    return Parsed(tuple(metrics), tuple(series), tuple(hists))


__all__ = [
    "CLIENTS",
    "RESULT",
    "bind_client_hosts",
    "command",
    "parse_fields",
    "parse_output",
    "service_suffix",
]
