"""The pgbench workload's side of the experiment file: its fields, their checks and the
case matrix (pgbench.py runs and reads it). Split from pgbench.py to keep each module
about one thing: what a user may write here, and what volbench does with it there.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.config import fieldrules, loadspec, userfile
from volbench.config.fields import Checked, Reader
from volbench.config.spec import DURATION as SECONDS
from volbench.config.spec import (
    Axis,
    Boolean,
    Field,
    Number,
    Text,
    TextList,
    TextMap,
)
from volbench.core import units
from volbench.core.model import Scalar
from volbench.remote.hosts import HostSpec
from volbench.services import pgsettings, postgres
from volbench.stats.curve import PGBENCH_SLA_STATS
from volbench.system.host import hostinfo, pgfind
from volbench.workloads import pgbench_hosts, pgbench_options, pgbench_scripts
from volbench.workloads.base import WorkloadSpec

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
SCALE_FORMS = "a scale factor (10), a database size (4G) or a multiple of RAM (2xRAM)"
_RAM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*RAM\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class PgbenchSpec(WorkloadSpec):
    """A pgbench workload as the experiment file gives it: the fields, read and checked."""

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
    """Estimated on-disk bytes of a pgbench database at `scale`."""
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


# Script files: read, checked and copied by pgbench_scripts (re-exported for callers).
read_script = pgbench_scripts.read
script_problem = pgbench_scripts.problem


def script_files(options: list[str]) -> list[tuple[int, Path]]:
    """(index, file) of every script the options give pgbench (`-f FILE[@W]`, bundled
    or spelled out), as pgbench reads them (pgbench_options)."""
    found, _ = pgbench_options.parse(options)
    return [(o.index, Path(pgbench_options.script_path(o.value)))
            for o in found if o.name == "file" and o.value is not None]


def _script(base: Path | None) -> Callable[[Any], str]:
    """A builtin name, or a script file (relative to the experiment file's folder) that
    uses no \\shell or \\setshell."""
    def convert(value: Any) -> str:
        text = str(value)
        if text in BUILTINS:
            return text
        path = fieldrules.absolute(text, base)
        if not path.exists():
            raise ValueError(f"'{text}' is neither a builtin script ({', '.join(BUILTINS)}) "
                             "nor a script file; expected a builtin name or a file path")
        try:
            read_script(path)
        except userfile.UserFileError as exc:
            raise ValueError(str(exc)) from None
        return str(path.resolve())
    return convert


def _choice(choices: tuple[str, ...]) -> Checked[str]:
    def convert(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"'{value}' is not one of: {', '.join(choices)}")
        return str(value)
    return Checked(convert, {"enum": list(choices)})


def _pg_value(value: Any) -> str:
    if isinstance(value, bool):  # YAML reads `fsync: off` as false
        return "on" if value else "off"
    return str(value)


MODE = Axis("mode", "run", convert=_choice(MODES), expected="run or init",
            help="run: measured pgbench runs; init: time pgbench -i itself")
SCALE = Axis("scale", 10, convert=_scale, expected=SCALE_FORMS,
             help="pgbench -s: " + SCALE_FORMS,
             value={"anyOf": [{"type": "number", "minimum": 1}, {"type": "string"}]})
# After a bad value parsing goes on with 1 client, not the default 10, so that the checks
# that depend on it (threads, max_connections) add no complaint of their own.
POSITIVE = {"type": "integer", "minimum": 1}
CLIENTS = Axis("clients", 10, convert=_positive, expected="a whole number", placeholder=1,
               help="client connections (-c), per client host", value=POSITIVE)
THREADS = Axis("threads", 1, convert=_positive, expected="a whole number",
               help="pgbench worker threads (-j), at most one per client", value=POSITIVE)
TRANSACTIONS = Axis("transactions", 1000, convert=_positive, expected="a whole number",
                    help="transactions per client (-t), instead of duration", value=POSITIVE)
DURATION = Axis("duration", "60s", convert=_whole_seconds, expected="a duration such as 60s",
                help="seconds of each run (-T), whole seconds", value=SECONDS)
SCRIPT = Axis("script", "tpcb-like", convert=_script(None), expected="a builtin or a file",
              help="a builtin (" + ", ".join(BUILTINS) + ") or a script file",
              value={"type": "string"})
QUERY_MODE = Axis("query_mode", "simple", convert=_choice(QUERY_MODES),
                  expected="a pgbench -M mode", help="pgbench -M: " + ", ".join(QUERY_MODES))
OPTIONS = TextList("options", [], help="more pgbench arguments for measured runs, verbatim")
INIT_OPTIONS = TextList("init_options", [], help="more pgbench -i arguments, verbatim")
INIT_STEPS_FIELD = Text("init_steps", "", help=f"pgbench -I steps, letters of {INIT_STEPS}")
LOG_SAMPLING = Number("log_sampling", 1.0, bounds=(0.0, 1.0),
                      help="fraction of transactions in the latency log (--sampling-rate)")
CHECKPOINT = Boolean("checkpoint", True, help="CHECKPOINT after every measured run")
PG_BIN = Text("pg_bin", "", help="bin directory of the PostgreSQL to use (default: found)")
# Read by _cluster, key by key: each setting is checked against what volbench sets itself.
SETTINGS = TextMap("settings", None, help="postgresql.conf settings of the throwaway cluster",
                   one_line=True)
FIELDS: tuple[Field[Any], ...] = (
    MODE, SCALE, CLIENTS, THREADS, TRANSACTIONS, DURATION, SCRIPT, QUERY_MODE, OPTIONS,
    INIT_OPTIONS, INIT_STEPS_FIELD, LOG_SAMPLING, CHECKPOINT, PG_BIN, SETTINGS,
    *pgbench_hosts.FIELDS, *loadspec.curve_fields(tuple(PGBENCH_SLA_STATS)))


def _cluster(r: Reader, max_clients: int) -> postgres.ClusterConfig:
    sr = r.sub(SETTINGS.name, {})
    user: dict[str, str] = {}
    for key, value in sr.data.items():
        problem = pgsettings.problem(str(key))
        if problem:
            sr.problem(str(key), problem, "remove it")
        elif value is None or isinstance(value, dict | list):
            sr.problem(str(key), "expected one value such as 256MB, on or 200")
        elif why := pgsettings.problem(str(key), _pg_value(value)):
            sr.problem(str(key), why)
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
    elif why := _changeable(path):
        r.problem("pg_bin", why, "give a bin directory that only root can change")
    return str(path)


def _changeable(path: Path) -> str | None:
    """Why someone other than root could change the programs of `path`, or None. volbench
    runs psql from it as root (its own statements) and initdb and postgres as postgres:
    a program another user can replace would run as them (pgbench, in its sandbox,
    could do no harm; the others could)."""
    for item in (path, *(path / name for name in pgfind.PROGRAMS)):
        try:
            st = item.stat()
        except OSError:
            continue
        if st.st_uid != 0:
            return f"{item} belongs to uid {st.st_uid}, not root"
        if st.st_mode & 0o022:
            return f"{item} may be changed by its group or by others ({oct(st.st_mode & 0o777)})"
    return None


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


def _check_lists(r: Reader, field: str, options: list[str]) -> None:
    """`options:` / `init_options:` as pgbench reads them (pgbench_options): options volbench
    sets, words pgbench would not take, script files that cannot run."""
    _, problems = pgbench_options.parse(options)
    for i, why in problems:
        r.problem(f"{field}[{i}]", why, "use the workload's fields (scale, clients, …) "
                  "for what volbench sets")
    for i, path in script_files(options):
        try:
            read_script(fieldrules.absolute(str(path), r.base))
        except (userfile.UserFileError, ValueError) as exc:
            r.problem(f"{field}[{i}]", str(exc))


def _check_init(r: Reader, init_steps: str, log_sampling: float) -> None:
    bad = sorted(set(init_steps) - set(INIT_STEPS))
    if bad:
        r.problem("init_steps", f"unknown init steps {''.join(bad)}",
                  f"use letters of {INIT_STEPS} (pgbench -I)")
    if not 0 < log_sampling <= 1:
        r.problem("log_sampling", f"must be a fraction above 0 and at most 1, got {log_sampling}")


def parse(r: Reader, name: str) -> PgbenchSpec:
    """Read this tool's fields; a bad value becomes a problem on the reader naming the field and
    the fix (a file's problems are reported together), never a raise."""
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
    _check_lists(r, "options", options)
    _check_lists(r, "init_options", init_options)
    _check_init(r, init_steps, log_sampling)
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
