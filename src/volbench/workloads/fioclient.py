"""fio in client/server mode: one fio client on this machine drives a server per host.

Each host gets its own job file (written to the run directory) with its own file
name, so hosts sharing one target never share a data file:

    fio --output-format=json+ --output=fio.json \\
        --client=ip:10.213.1.2,8765 job-a.fio --client=ip:10.213.2.2,8765 job-b.fio

(`--client=A --client=B job` would run the job on B only: a job file belongs to the
--client before it.) fio sends each file to its server, so paths in it are paths on
that host. The client's JSON has one `client_stats` entry per host plus "All clients";
the per-host logs come back as `fio-HOST_iops.N.log.ADDRESS`.

A manifest (`clients.json`) lists the hosts the run expected. fio leaves out a host it
could not reach and still exits 0, so a host missing from the output is an error
naming it; so is a host whose server died mid-run (fio then exits 1). Either way the
survivors' numbers are kept on the error (`ParseError.partial`), which the runner
records with the failed run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from volbench.config import pathcheck, userfile
from volbench.core import units
from volbench.core.errors import ParseError
from volbench.core.model import Params, Parsed, Series
from volbench.services.keys import FIO_CLIENTS as CLIENTS
from volbench.workloads.base import Invocation, LostHosts, RunContext

MANIFEST = "clients.json"
LOG_PREFIX = "fio"
_CLIENT_LOG = re.compile(rf"^{LOG_PREFIX}-(.+)_(iops|bw)\.(\d+)\.log\.(.+)$")
_DISCONNECTED = re.compile(r"client: host=(\S+) disconnected")
_NO_CONNECT = re.compile(r"failed to connect to (\S+):(\d+)")


def clients(ctx: RunContext) -> list[dict[str, Any]] | None:
    """The fio servers of a multi-host target, or None for an ordinary target."""
    raw = ctx.service.get(CLIENTS)
    return list(json.loads(raw)) if raw else None


def data_file(client: Mapping[str, Any], params: Params) -> str:
    """The host's data file: its own name on a directory (hosts may share one), or the device."""
    if client.get("path"):
        return f"{client['path']}/volbench-fio-{params.get('size', 'job')}-{client['host']}.dat"
    if client.get("device"):
        return str(client["device"])
    raise ParseError("fio", str(client["host"]), "host has neither a directory nor a device")


def _section(name: str, lines: Sequence[tuple[str, str]]) -> str:
    return f"[{name}]\n" + "".join(f"{k}={v}\n" for k, v in lines)


def _logs(host: str) -> list[tuple[str, str]]:
    return [
        ("write_iops_log", f"{LOG_PREFIX}-{host}"),
        ("write_bw_log", f"{LOG_PREFIX}-{host}"),
        ("log_avg_msec", "1000"),
    ]


def job_text(
    name: str,
    client: Mapping[str, Any],
    params: Params,
    job: Sequence[tuple[str, str]],
    options: Mapping[str, str],
) -> str:
    """A matrix case as a job file for one host."""
    lines = [
        ("filename", data_file(client, params)),
        *job,
        *_logs(str(client["host"])),
        *options.items(),
    ]
    return _section(name, lines)


def user_job_text(jobfile: Path, client: Mapping[str, Any], options: Mapping[str, str]) -> str:
    """The user's job file for one host: a [global] section in front sets the host's
    directory, logs and options (the file's own [global] settings come later and win)."""
    head = [("directory", str(client["path"]))] if client.get("path") else []
    head += [*_logs(str(client["host"])), *options.items()]
    text = pathcheck.flatten(jobfile, lambda p: userfile.read_text(p, "fio job file"))
    return _section("global", head) + "\n" + text


def _argv(out: Path, files: Sequence[tuple[Mapping[str, Any], Path]], fmt: str) -> list[str]:
    argv = ["fio", f"--output-format={fmt}", f"--output={out}"]
    for client, path in files:
        argv += [f"--client={client['server']}", str(path)]
    return argv


def command(ctx: RunContext, texts: Mapping[str, str], timeout: float) -> Invocation:
    """The client invocation running `texts` (job file text by host name)."""
    rundir = ctx.rundir
    entries = clients(ctx) or []
    files = [(client, rundir / f"job-{client['host']}.fio") for client in entries]
    manifest = rundir / MANIFEST
    out = rundir / "fio.json"
    return Invocation(
        tuple(_argv(out, files, "json+")),
        timeout=timeout,
        cwd=rundir,
        files={**{path: texts[c["host"]] for c, path in files}, manifest: json.dumps(entries)},
        outputs={"fio.json": out, MANIFEST: manifest},
        output_globs=(f"{LOG_PREFIX}-*.log.*",),
    )


def layout(ctx: RunContext, params: Params) -> list[Invocation]:
    """Write every host's data file once (direct I/O), through the servers."""
    rundir = ctx.rundir
    seen: set[str] = set()
    files = []
    texts: dict[Path, str] = {}
    size = str(params["size"])
    for client in clients(ctx) or []:
        filename = data_file(client, params)
        if filename in seen:  # hosts sharing one device lay it out once
            continue
        seen.add(filename)
        path = rundir / f"layout-{client['host']}.fio"
        texts[path] = _section(
            "layout",
            [
                ("filename", filename),
                ("size", size),
                ("rw", "write"),
                ("bs", "1M"),
                ("direct", "1"),
                ("ioengine", "libaio"),
                ("iodepth", "8"),
                ("end_fsync", "1"),
            ],
        )
        files.append((client, path))
    out = rundir / "layout.json"
    timeout = 120 + len(files) * units.parse_size(size) / (5 * 1024**2)
    return [
        Invocation(
            tuple(_argv(out, files, "json")),
            timeout=timeout,
            cwd=rundir,
            throttled=False,
            outputs={"layout.json": out},
            files=texts,
        )
    ]


# -- parsing ------------------------------------------------------------------------------


def _names(manifest: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """fio's host tags -> host names. fio.parse_json tags an entry with the address, or
    with address:port when the address appears twice in the output (as it does for
    one host beside the "All clients" entry, which repeats one host's address)."""
    addresses = [str(c["address"]) for c in manifest]
    names: dict[str, str] = {"all": "all"}
    for client, address in zip(manifest, addresses, strict=True):
        names[f"{address}:{client['port']}"] = str(client["host"])
        if addresses.count(address) == 1:
            names[address] = str(client["host"])
    return names


def _rename(tags: Mapping[str, str], names: Mapping[str, str]) -> dict[str, str]:
    host = tags.get("host")
    return {**tags, "host": names.get(host, host)} if host is not None else dict(tags)


def _lost(
    text: str, console: str, manifest: Sequence[Mapping[str, Any]], seen: set[str]
) -> dict[str, str]:
    gone = set(_DISCONNECTED.findall(text + console))
    refused = {f"{a}:{p}" for a, p in _NO_CONNECT.findall(text + console)}
    lost: dict[str, str] = {}
    for client in manifest:
        address, port, host = str(client["address"]), client["port"], str(client["host"])
        if address in gone:
            lost[host] = (
                f"its fio server at {address}:{port} disconnected during the run "
                "(the server died or the network failed)"
            )
        elif f"{address}:{port}" in refused:
            lost[host] = (
                f"fio could not connect to its server at {address}:{port} (is it "
                "still running? a server that died in an earlier run stays down)"
            )
        elif host not in seen:
            lost[host] = f"no results from its server at {address}:{port}"
    return lost


def _single_host_totals(parsed: Parsed, host: str) -> Parsed:
    """With one host fio prints no "All clients" entry: its numbers are the total."""

    def total(tags: Mapping[str, str]) -> dict[str, str]:
        return {**tags, "host": "all"}

    metrics = [
        replace(m, tags=total(m.tags))
        for m in parsed.metrics
        if m.tags.get("host") == host and m.name != "disk_util"
    ]
    hists = [
        replace(h, tags=total(h.tags)) for h in parsed.histograms if h.tags.get("host") == host
    ]
    return Parsed((*parsed.metrics, *metrics), parsed.series, (*parsed.histograms, *hists))


def client_series(
    outputs: Mapping[str, str], parse_logs: Callable[[Mapping[str, str]], tuple[Series, ...]]
) -> tuple[Series, ...]:
    """Per-host series (tagged host) from the client's log files, plus their sum (host=all)."""
    by_host: dict[str, dict[str, str]] = {}
    every: dict[str, str] = {}  # all hosts' logs under unique names: parse_logs sums them
    for name, text in sorted(outputs.items()):
        m = _CLIENT_LOG.match(Path(name).name)
        if m:
            by_host.setdefault(m.group(1), {})[f"{LOG_PREFIX}_{m.group(2)}.{m.group(3)}.log"] = text
            every[f"{LOG_PREFIX}_{m.group(2)}.{len(every) + 1}.log"] = text
    series: list[Series] = []
    for host, logs in sorted(by_host.items()):
        series += [replace(s, tags={**s.tags, "host": host}) for s in parse_logs(logs)]
    if len(by_host) > 1:
        series += [replace(s, tags={**s.tags, "host": "all"}) for s in parse_logs(every)]
    return tuple(series)


def parse(
    outputs: Mapping[str, str],
    parse_json: Callable[[str, str], Parsed],
    parse_logs: Callable[[Mapping[str, str]], tuple[Series, ...]],
) -> Parsed:
    """Client/server results tagged with host names; PartialResults if a host is missing."""
    manifest = json.loads(outputs[MANIFEST])
    names = _names(manifest)
    text = outputs.get("fio.json", "")
    console = outputs.get("stdout", "") + outputs.get("stderr", "")
    try:
        raw = parse_json(text, "fio.json")
    except ParseError:
        lost = _lost(text, console, manifest, set())
        if not lost:
            raise
        raw = Parsed()
    metrics = tuple(replace(m, tags=_rename(m.tags, names)) for m in raw.metrics)
    hists = tuple(replace(h, tags=_rename(h.tags, names)) for h in raw.histograms)
    parsed = Parsed(metrics, client_series(outputs, parse_logs), hists)
    seen = {m.tags["host"] for m in metrics if "host" in m.tags}
    if len(manifest) == 1 and manifest[0]["host"] in seen:
        parsed = _single_host_totals(parsed, str(manifest[0]["host"]))
    lost = _lost(text, console, manifest, seen)
    if lost:
        # Without every host, fio's "All clients" sum is not the experiment's total.
        kept = [m for m in parsed.metrics if m.tags.get("host") != "all"]
        raise LostHosts(
            "fio",
            "client/server run",
            lost,
            Parsed(
                tuple(kept),
                parsed.series,
                tuple(h for h in parsed.histograms if h.tags.get("host") != "all"),
            ),
        )
    return parsed


__all__ = [
    "CLIENTS",
    "MANIFEST",
    "command",
    "job_text",
    "layout",
    "parse",
    "user_job_text",
]
