"""pgbench's outputs → metrics, series and latency histograms (pure functions).

Formats (captured in tests/data/pgbench/):
- run summary on stdout: 15/16 print `latency average = 1.2 ms` and one
  `tps = … (without initial connection time)`; 9.4 prints `latency average: 1.2 ms`
  and two tps lines, `(including …)` and `(excluding connections establishing)`;
  `-C` prints `(including reconnection times)`; several scripts add `SQL script N:`
  sections; `-r` adds statement latencies (15: with a failures column);
- progress on stderr (`-P`): `progress: 1.0 s, 2992.7 tps, lat 1.324 ms stddev 0.831,
  0 failed` (9.4 without `failed`; `--progress-timestamp` gives epoch seconds);
- init on stderr: per-100000-row lines `100000 of 200000 tuples (50%) done (elapsed
  0.05 s, remaining 0.05 s)` (18: `… (50%) of pgbench_accounts done …`) and `done in
  0.21 s (drop tables 0.00 s, …)` (12 and 9.4: `done.`, no times: the init time is
  then the wall-clock time of pgbench -i, when the caller timed it);
- `-l` logs: per transaction `client_id tx_no time_us script_no epoch epoch_us …`, or
  with `--aggregate-interval` one line per interval
  `start count sum_lat sum_lat² min_lat max_lat …` (µs).
Values leave in base units: seconds, tx/s, bytes.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from volbench.core.errors import ParseError
from volbench.core.model import Histogram, Metric, Parsed, Scalar, Series
from volbench.stats.histogram import percentile_from_histogram
from volbench.stats.series import fill_rate_gaps

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+|nan|NaN|-nan|inf)"
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
# How the summary names a builtin script (15/16 and 9.4) -> volbench's `script` value.
BUILTIN_NAMES = {"TPC-B (sort of)": "tpcb-like", "simple update": "simple-update",
                 "select only": "select-only", "Update only pgbench_accounts": "simple-update",
                 "SELECT only": "select-only"}
CUT_MARK = "[volbench: cut at"

_HEADER = {key: re.compile(rf"^{pattern}$") for key, pattern in {
    "version": r"pgbench \((.+)\)",
    "transaction_type": r"transaction type: (.+)",
    "scale": r"scaling factor: (\d+)",
    "query_mode": r"query mode: (\S+)",
    "clients": r"number of clients: (\d+)",
    "threads": r"number of threads: (\d+)",
    "max_tries": r"maximum number of tries: (\d+)",
    "duration": r"duration: (\d+) s",
    "transactions_per_client": r"number of transactions per client: (\d+)",
}.items()}

# Summary lines (also inside ` - ` script sections): groups -> (metric, unit, factor).
_LINES: list[tuple[re.Pattern[str], tuple[tuple[str, str, float], ...]]] = [
    (re.compile(rf"^{p}$"), spec) for p, spec in (
        (r"number of transactions actually processed: (\d+)(?:/\d+)?",
         (("transactions", "tx", 1.0),)),
        (rf"(\d+) transactions \([\d.]+% of total, tps = ({NUM})\)",
         (("transactions", "tx", 1.0), ("tps", "tx/s", 1.0))),
        (r"number of failed transactions: (\d+) \(.*\)", (("failed_transactions", "tx", 1.0),)),
        (r"number of transactions retried: (\d+) \(.*\)",
         (("retried_transactions", "tx", 1.0),)),
        (r"total number of retries: (\d+)", (("retries", "tx", 1.0),)),
        (r"number of transactions skipped: (\d+) \(.*\)",
         (("skipped_transactions", "tx", 1.0),)),
        (rf"latency average\s*[=:]\s*({NUM}) ms", (("latency_avg", "s", 1e-3),)),
        (rf"latency stddev\s*[=:]\s*({NUM}) ms", (("latency_stddev", "s", 1e-3),)),
        (rf"rate limit schedule lag: avg ({NUM}) \(max ({NUM})\) ms",
         (("schedule_lag_avg", "s", 1e-3), ("schedule_lag_max", "s", 1e-3))),
        (rf"initial connection time = ({NUM}) ms", (("initial_connection_time", "s", 1e-3),)),
        (rf"average connection time = ({NUM}) ms", (("connection_time_avg", "s", 1e-3),)),
    )]
_LATE = re.compile(rf"^number of transactions above the ({NUM}) ms latency limit: (\d+)/\d+")
_TPS = re.compile(rf"^tps = ({NUM}) \((.+)\)$")
_SCRIPT = re.compile(r"^SQL script (\d+): (.+)$")
_STATEMENTS = re.compile(r"^(?: - )?statement latencies in milliseconds(?: and failures)?:$")
_STATEMENT = re.compile(rf"^\s+({NUM})\s+(?:(\d+)\s+)?(\S.*)$")
# A commit statement in a script: END or COMMIT (WORK / TRANSACTION), with or without ';'.
_COMMIT = re.compile(r"^(?:END|COMMIT)(?:\s+(?:WORK|TRANSACTION))?\s*;?$", re.I)
_PROGRESS = re.compile(rf"^progress: ({NUM}) s, ({NUM}) tps, lat ({NUM}) ms stddev ({NUM})"
                       rf"(?:, (\d+) failed)?(?:, lag ({NUM}) ms)?")
_DONE = re.compile(rf"^done in ({NUM}) s \((.*)\)\.?$")
_OLD_DONE = "done."  # the last line of pgbench -i before 13
_PHASE = re.compile(rf"([a-z][a-z -]*?) ({NUM}) s(?:,|$)")
# 18 names the table: `100000 of 200000 tuples (50%) of pgbench_accounts done (…)`.
_ROWS = re.compile(rf"^(\d+) of (\d+) tuples \(\d+%\)(?: of \w+)? done \(elapsed ({NUM}) s, "
                   rf"remaining {NUM} s\)\.?$")


def _number(text: str, factor: float = 1.0) -> float | None:
    value = float(text)
    return value * factor if math.isfinite(value) else None


def _metric(name: str, text: str, unit: str, factor: float, tags: Mapping[str, str],
            note: str = "") -> Metric:
    value = _number(text, factor)
    return Metric(name, value, unit, dict(tags), note if value is not None else "not a number")


@dataclass(frozen=True)
class Report:
    """A run summary: the header fields as printed, and its metrics."""

    header: Mapping[str, str]
    metrics: tuple[Metric, ...]

    def has_tps(self) -> bool:
        """Whether the summary gave a run-wide (untagged) tps."""
        return any(m.name == "tps" and not m.tags for m in self.metrics)


def _tps(m: re.Match[str], tags: Mapping[str, str]) -> Metric:
    kind = m.group(2)
    if kind.startswith("including connections"):
        return _metric("tps_including_connections", m.group(1), "tx/s", 1.0, tags)
    note = "-C: includes reconnecting for every transaction" if "reconnection" in kind else ""
    return _metric("tps", m.group(1), "tx/s", 1.0, tags, note)


def _summary_line(body: str, tags: Mapping[str, str]) -> list[Metric]:
    m = _TPS.match(body)
    if m:
        return [_tps(m, tags)]
    m = _LATE.match(body)
    if m:
        return [Metric("late_transactions", float(m.group(2)), "tx", dict(tags),
                       f"above the {m.group(1)} ms latency limit")]
    for pattern, spec in _LINES:
        m = pattern.match(body)
        if m:
            return [_metric(name, m.group(i), unit, factor, tags)
                    for i, (name, unit, factor) in enumerate(spec, 1)]
    return []


def commit_metrics(statements: Sequence[Metric]) -> list[Metric]:
    """`commit_latency` (s): the latency of a script's commit statement (END, COMMIT) in
    pgbench's per-statement table (-r, --report-per-command): what each transaction waits
    for its WAL flush (with synchronous_commit on). Tagged like the table (script); a
    script with several commits keeps each one's row number `n`."""
    commits = [m for m in statements if _COMMIT.match(m.tags.get("statement", ""))]
    out = []
    for m in commits:
        tags = {k: v for k, v in m.tags.items() if k not in ("statement", "n")}
        if sum(1 for c in commits if c.tags.get("script") == m.tags.get("script")) > 1:
            tags["n"] = m.tags["n"]
        out.append(Metric("commit_latency", m.value, "s", tags, m.note))
    return out


def parse_report(text: str) -> Report:
    """Header fields and metrics of a run summary (any version; stray lines are ignored)."""
    header: dict[str, str] = {}
    metrics: list[Metric] = []
    tags: dict[str, str] = {}
    statement = 0  # > 0 while inside a statement-latency table: its next row number
    for raw in text.splitlines():
        line = raw.rstrip()
        if statement:
            m = _STATEMENT.match(line)
            if m:
                st_tags = {**tags, "statement": m.group(3).strip(), "n": str(statement)}
                metrics.append(_metric("statement_latency", m.group(1), "s", 1e-3, st_tags))
                if m.group(2) is not None:
                    metrics.append(Metric("statement_failures", float(m.group(2)), "tx",
                                          st_tags))
                statement += 1
                continue
            statement = 0
        if _STATEMENTS.match(line):
            statement = 1
            continue
        m = _SCRIPT.match(line)
        if m:
            tags = {"script": _script_name(m.group(2))}
            continue
        if not tags:
            for key, pattern in _HEADER.items():
                hm = pattern.match(line)
                if hm and key not in header:
                    header[key] = hm.group(1)
        metrics += _summary_line(line[3:] if line.startswith(" - ") else line, tags)
    metrics += commit_metrics([m for m in metrics if m.name == "statement_latency"])
    return Report(header, tuple(metrics))


def _script_name(text: str) -> str:
    """`<builtin: TPC-B (sort of)>` -> tpcb-like; a custom script keeps its path."""
    inner = text[len("<builtin: "):-1] if text.startswith("<builtin: ") else text
    return BUILTIN_NAMES.get(inner, inner)


def parse_run(text: str, source: str = "pgbench output") -> Report:
    """A run summary that must hold the overall tps."""
    report = parse_report(text)
    if not report.has_tps():
        if "aborted" in text:
            raise ParseError("pgbench", source, "the run was aborted (clients failed): "
                             + _last_error(text))
        raise ParseError("pgbench", source, "no 'tps = …' line; is this a pgbench run's output?")
    return report


def _last_error(text: str) -> str:
    errors = [line for line in text.splitlines() if "error:" in line]
    return errors[0].strip() if errors else "no error message"


def params_from_header(header: Mapping[str, str]) -> dict[str, Scalar]:
    """volbench's case parameters, as its own runs spell them, from a summary header."""
    params: dict[str, Scalar] = {"mode": "run"}
    for key in ("scale", "clients", "threads"):
        if key in header:
            params[key] = int(header[key])
    if "duration" in header:
        params["duration"] = float(header["duration"])
    if "transactions_per_client" in header:
        params["transactions"] = int(header["transactions_per_client"])
    if "transaction_type" in header:
        params["script"] = _script_name(header["transaction_type"])
    if header.get("query_mode", "simple") != "simple":
        params["query_mode"] = header["query_mode"]
    return params


class InitFailed(ParseError):
    """The output is of a pgbench -i that failed; `detail` is the message that stopped it
    (an import stores it as a failed run with that message)."""


# What pgbench -i prints before its steps (any version): the output is an init's.
_INIT_MARKS = ("dropping old tables", "creating tables", "generating data",
               "creating primary keys", "vacuuming", "tuples (")
# A line that stops pgbench: its own errors and the server's (pgbench 9.4-12 print the
# server's ERROR line bare, 13+ after "pgbench: error:"; a bad -I step has its own words).
_STOPPED = re.compile(r"(?:^pgbench: (?:error|fatal): |\bERROR:\s|^unrecognized initialization "
                      r"step )")


def init_failure(text: str) -> str | None:
    """The message that stopped a pgbench -i, or None when the text is not a failed init.

    An init output (its step lines, row progress or `done in`) with an error line is a
    failed init, even when rows and step times came before the error: those figures
    are of an init that did not finish and must never stand as a finished one's."""
    lines = [line.strip() for line in text.splitlines()]
    errors = [line for line in lines if _STOPPED.search(line)]
    if not errors:
        return None
    looks_init = any(mark in line for line in lines for mark in _INIT_MARKS) or \
        errors[0].startswith("unrecognized initialization step")
    if not looks_init:
        return None
    # The server's words after pgbench's prefix: "ERROR:  multiple primary keys …".
    message = errors[0].removeprefix("pgbench: error: ").removeprefix("pgbench: fatal: ")
    return re.sub(r"^query failed: ", "", message)


def progress_only(text: str) -> Parsed | None:
    """A run's -P progress lines without its summary (stderr kept apart from stdout): the
    per-second series and, as the run's tps and latency_avg, the interval-weighted means
    of those seconds, each with a note saying so. None without progress lines."""
    series = parse_progress(text)
    found = {s.name: s for s in series}
    tps = found.get("tps")
    if tps is None or not tps.points:
        return None
    spans = _spans([t for t, _ in tps.points])
    total = sum(spans)
    mean_tps = sum(v * d for (_, v), d in zip(tps.points, spans, strict=True)) / total
    n = len(tps.points)
    note = (f"mean of {n} progress interval(s) (pgbench -P) over {total:g} s: the file has no "
            "summary ('tps = …' is on stdout)")
    metrics = [Metric("tps", mean_tps, "tx/s", {}, note)]
    lat = found.get("latency_avg")
    weights = [v * d for (_, v), d in zip(tps.points, spans, strict=True)]
    if lat is not None and len(lat.points) == n and sum(weights) > 0:
        # Transaction-weighted: each interval's mean latency counts by its transactions.
        value = sum(w * v for w, (_, v) in zip(weights, lat.points, strict=True)) / sum(weights)
        metrics.append(Metric("latency_avg", value, "s", {}, note))
    return Parsed(tuple(metrics), series)


def _spans(times: Sequence[float]) -> list[float]:
    """Each progress interval's length: time since the previous line (the first: since 0)."""
    return [t - (times[i - 1] if i else 0.0) for i, t in enumerate(times)]


def parse_any(text: str, source: str = "pgbench output") -> tuple[dict[str, Scalar], Parsed]:
    """A run's or an init's output (stdout, stderr or both), for `volbench import`.

    A failed init raises InitFailed (with its message); a run's progress lines alone
    (stderr without stdout) give the run with the means of its seconds (`progress_only`).
    """
    report = parse_report(text)
    if report.has_tps():
        return params_from_header(report.header), Parsed(report.metrics, parse_progress(text))
    failure = init_failure(text)
    if failure is not None:
        raise InitFailed("pgbench", source, failure)
    progress = progress_only(text)
    if progress is not None and "aborted" not in text:
        return {"mode": "run"}, progress
    try:
        parsed = parse_init(text, source)
    except ParseError:
        parse_run(text, source)  # raises, saying what a run's output lacks
        raise
    params: dict[str, Scalar] = {"mode": "init"}
    scale = init_scale(text)
    if scale:
        params["scale"] = scale
    return params, parsed


def parse_progress(text: str) -> tuple[Series, ...]:
    """Per-interval tps and latency from `-P` lines (time = end of the interval, s)."""
    rows = [m for line in text.splitlines() if (m := _PROGRESS.match(line.strip()))]
    if not rows:
        return ()
    times = [float(m.group(1)) for m in rows]
    if times[0] > 1e8:  # --progress-timestamp: epoch seconds; count from one step before
        step = times[1] - times[0] if len(times) > 1 else 1.0
        times = [t - times[0] + step for t in times]
    columns: dict[tuple[str, str], list[tuple[float, float]]] = {}
    last = -math.inf
    for t, m in zip(times, rows, strict=True):
        if t <= last:
            continue  # a repeated or out-of-order line: the series must increase
        last = t
        fields = (("tps", "tx/s", m.group(2), 1.0), ("latency_avg", "s", m.group(3), 1e-3),
                  ("latency_stddev", "s", m.group(4), 1e-3),
                  ("failed_transactions", "tx", m.group(5), 1.0),
                  ("schedule_lag", "s", m.group(6), 1e-3))
        for name, unit, value, factor in fields:
            number = _number(value, factor) if value is not None else None
            if number is not None:
                columns.setdefault((name, unit), []).append((t, number))
    if ("tps", "tx/s") in columns:  # a period without a line is one without transactions
        columns[("tps", "tx/s")] = fill_rate_gaps(columns[("tps", "tx/s")])
    return tuple(Series(name, unit, tuple(points)) for (name, unit), points in columns.items())


def parse_init(text: str, source: str = "pgbench -i output",
               elapsed: float | None = None) -> Parsed:
    """Init time as a whole and per phase, rows generated, and the generation rate over time.

    pgbench before 13 prints no times at all: with `elapsed`, the wall-clock seconds of
    the pgbench -i process, init_time is that (process start and connection included,
    a few ms more than pgbench's own figure), so an init run has its headline on 12 too."""
    metrics: list[Metric] = []
    rows: list[tuple[int, int, float]] = []
    for raw in text.splitlines():
        line = raw.strip()
        m = _DONE.match(line)
        if m:
            metrics.append(_metric("init_time", m.group(1), "s", 1.0, {}))
            for phase, value in _PHASE.findall(m.group(2)):
                phase = re.sub(r"[^a-z0-9]+", "_", phase.strip()).strip("_")
                metrics.append(_metric("init_" + phase, value, "s", 1.0, {}))
            continue
        m = _ROWS.match(line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), float(m.group(3))))
    # Before 13 (no 'done in' line): `done.`, and with -I steps without g no rows either.
    untimed = not metrics and (bool(rows) or _OLD_DONE in (r.strip() for r in text.splitlines()))
    if not metrics and not rows and not (untimed and elapsed):
        raise ParseError("pgbench", source, "neither a 'done in' line nor row progress lines; "
                         "is this the output of pgbench -i?")
    if untimed and elapsed:
        metrics.append(Metric("init_time", elapsed, "s", {},
                              "wall-clock time of pgbench -i (it prints no init time)"))
    if rows:
        if untimed:
            metrics.append(Metric("init_client_side_generate", rows[-1][2], "s", {},
                                  "elapsed time of the last row progress line"))
        metrics.append(Metric("init_rows", float(rows[-1][0]), "row"))
    return Parsed(tuple(metrics), _init_rate(rows))


def _init_rate(rows: list[tuple[int, int, float]]) -> tuple[Series, ...]:
    """Rows per second between progress lines: a stalled disk shows as a dip."""
    points: list[tuple[float, float]] = []
    done, t = 0, 0.0
    for count, _, elapsed in rows:
        if elapsed > t:  # lines 0.00 s apart carry over to the next interval
            points.append((elapsed, (count - done) / (elapsed - t)))
            done, t = count, elapsed
    return (Series("init_rate", "row/s", tuple(points)),) if points else ()


def init_scale(text: str) -> int | None:
    """The scale an init output generated (100000 accounts rows per scale unit)."""
    totals = [int(m.group(2)) for line in text.splitlines() if (m := _ROWS.match(line.strip()))]
    return totals[-1] // 100_000 if totals else None


# -- transaction logs (-l) -------------------------------------------------------------

def latency_bin(us: int) -> int:
    """Round a latency in µs to 3 significant digits (exact below 1 ms).

    Relative error at most 0.5 %, and at most 900 bins per decade, so a run's histogram
    stays small however many transactions it logged.
    """
    if us < 1000:
        return us
    step = int(10 ** (len(str(us)) - 3))
    return (us + step // 2) // step * step


@dataclass(frozen=True)
class TxLog:
    """Latencies of logged transactions, binned (seconds -> count)."""

    bins: Mapping[float, int]
    transactions: int
    # Transactions logged without a latency (failed, skipped by -L).
    unfinished: int
    truncated: bool


def parse_txlogs(texts: Iterable[str]) -> TxLog:
    """Per-transaction logs (one per thread): `client tx_no time_us script epoch epoch_us …`."""
    bins: dict[int, int] = {}
    unfinished = 0
    truncated = False
    for text in texts:
        for line in text.splitlines():
            if line.startswith(CUT_MARK):
                truncated = True
                continue
            columns = line.split()
            if len(columns) < 6:
                continue
            _client, _tx_no, time_us, *_ = columns
            if not time_us.isdigit():  # "failed", "skipped", "serialization", …
                unfinished += 1
                continue
            b = latency_bin(int(time_us))
            bins[b] = bins.get(b, 0) + 1
    return TxLog({us / 1e6: n for us, n in sorted(bins.items())}, sum(bins.values()),
                 unfinished, truncated)


def latency_metrics(log: TxLog, sampling: float) -> tuple[list[Metric], tuple[Histogram, ...]]:
    """latency_p50 … p99.9 and the histogram that merges across repetitions."""
    if not log.bins:
        return [], ()
    notes = []
    if sampling < 1:
        notes.append(f"from a {sampling:.0%} sample of transactions (--sampling-rate)")
    if log.truncated:
        notes.append("the transaction log was cut: the start of the run only")
    note = "; ".join(notes)
    metrics = [Metric(f"latency_p{p:g}", percentile_from_histogram(log.bins, p), "s", {}, note)
               for p in PERCENTILES]
    metrics.append(Metric("logged_transactions", float(log.transactions), "tx", {}, note))
    return metrics, (Histogram("latency", "s", tuple(log.bins.items())),)


def parse_aggregate_log(text: str) -> tuple[Series, ...]:
    """`--aggregate-interval` logs: `start count sum_lat sum_lat² min max …` per interval."""
    rows: list[tuple[float, int, float]] = []
    for line in text.splitlines():
        columns = line.split()
        if len(columns) < 6 or not columns[0].isdigit():
            continue
        start, count, latency_sum, *_ = columns
        rows.append((float(start), int(count), float(latency_sum)))
    if not rows:
        return ()
    # The interval: the median spacing (pgbench writes no line for an interval without
    # transactions, so the first spacing may be a gap); missing intervals are zero-tps.
    step = (statistics.median(b[0] - a[0] for a, b in itertools.pairwise(rows))
            if len(rows) > 1 else 1.0)
    first = rows[0][0]
    tps = tuple(fill_rate_gaps([(start - first + step, count / step)
                                for start, count, _ in rows]))
    lat = tuple((start - first + step, total / count / 1e6)
                for start, count, total in rows if count)
    return (Series("tps", "tx/s", tps), Series("latency_avg", "s", lat))


# -- the database against memory -------------------------------------------------------

def cache_metrics(facts: str | None, dbsize: str | None) -> tuple[list[Metric], str]:
    """db_size and how it compares with RAM and shared_buffers, plus a note if it fits.

    `facts` is the cluster's facts.json (ram_bytes, shared_buffers_bytes), `dbsize` what
    `SELECT pg_database_size(…)` printed after init.
    """
    numbers = [line.strip() for line in (dbsize or "").splitlines() if line.strip().isdigit()]
    if not numbers:
        return [], ""
    size = float(numbers[-1])
    metrics = [Metric("db_size", size, "B")]
    try:
        known = json.loads(facts) if facts else {}
    except json.JSONDecodeError:
        known = {}
    ram = float(known.get("ram_bytes") or 0)
    buffers = float(known.get("shared_buffers_bytes") or 0)
    if buffers:
        metrics.append(Metric("shared_buffers", buffers, "B"))
    if not ram:
        return metrics, ""
    metrics.append(Metric("db_size_of_ram", 100 * size / ram, "%"))
    if size <= buffers:
        return metrics, "cached: the database fits in shared_buffers, reads never reach the disk"
    if size < ram:
        return metrics, (f"cached: the database ({size / 2**20:.0f} MiB) fits in RAM "
                         f"({ram / 2**30:.1f} GiB); once read it stays in the page cache, and "
                         "mostly writes reach the disk")
    return metrics, ""
