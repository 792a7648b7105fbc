"""Many runs into one experiment at once, inside the caller's transaction (push/pull).

Store.insert_run stores one run in about nine statements; over a network (or a loaded
Unix socket) each waits for the server: 2 000 runs took 57 s. Here every table gets one
COPY (PostgreSQL) or executemany (SQLite) for the whole batch, run ids are taken from
the sequence in one query, and the per-case histogram totals are summed in Python and
written once. Same rows as insert_run, row for row (tests compare the two).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from volbench.core.model import RunResult, Status, canonical_json
from volbench.store import pg, schema

# (run, its UUID, its fingerprint digest)
Item = tuple[RunResult, str, str]


def _new_ids(db: schema.Connection, count: int) -> list[int]:
    """`count` unused run ids (the caller holds the write lock)."""
    if isinstance(db, pg.PgConnection):
        rows = db.execute("SELECT nextval(pg_get_serial_sequence('runs', 'id'))"
                          " FROM generate_series(1, ?)", (count,)).fetchall()
        return [int(r[0]) for r in rows]
    (top,) = db.execute("SELECT ifnull(max(id), 0) FROM runs").fetchone()
    return list(range(int(top) + 1, int(top) + 1 + count))


def _copy_field(value: Any) -> str:
    """One value in COPY's text format: \\N for NULL, bytea as hex, text escaped."""
    if value is None:
        return "\\N"
    if isinstance(value, str):
        if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
            return (value.replace("\\", "\\\\").replace("\t", "\\t")
                    .replace("\n", "\\n").replace("\r", "\\r"))
        return value
    if isinstance(value, bytes | memoryview):
        return "\\\\x" + bytes(value).hex()
    return repr(value) if isinstance(value, float) else str(value)


def _put(db: schema.Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    """Append rows to a table: COPY on PostgreSQL (a stream, no reply per row), else
    executemany."""
    if not rows:
        return
    if isinstance(db, pg.PgConnection):
        # COPY's text format written here: psycopg's write_row adapts value by value
        # (0.8 s of a 1 000-run push went there).
        text = "".join("\t".join(map(_copy_field, row)) + "\n" for row in rows)
        with db.conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            copy.write(text)
        return
    marks = ", ".join("?" * len(columns.split(",")))
    db.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def insert_runs(db: schema.Connection, experiment_id: int, items: Sequence[Item]) -> None:
    """Store `items` as runs of `experiment_id`; commits nothing."""
    if not items:
        return
    ids = _new_ids(db, len(items))
    runs, metrics_json, metrics, series, histograms, outputs = [], [], [], [], [], []
    kinds: set[tuple[int, str, str]] = set()
    totals: dict[tuple[str, str, str, str, str, str], dict[float, int]] = {}
    counts: dict[tuple[str, str, str, str, str, str], int] = {}
    for run_id, (run, run_uuid, digest) in zip(ids, items, strict=True):
        params = canonical_json(dict(run.params))
        runs.append((run_id, experiment_id, run.target, run.workload, params, run.case_key,
                     run.repetition, int(run.warmup), str(run.status), run.started, run.ended,
                     json.dumps(list(run.argv)), run.exit_code, run.error,
                     canonical_json(dict(run.annotations)), run_uuid, digest))
        metrics_json.append((run_id, json.dumps([m.to_json() for m in run.metrics],
                                                separators=(",", ":"))))
        metrics += [(run_id, m.name, m.value, m.unit, canonical_json(dict(m.tags)), m.note)
                    for m in run.parsed.metrics]
        kinds |= {(experiment_id, m.name, m.unit) for m in run.parsed.metrics}
        series += [(run_id, s.name, s.unit, canonical_json(dict(s.tags)), json.dumps(s.points))
                   for s in run.parsed.series]
        histograms += [(run_id, h.name, h.unit, canonical_json(dict(h.tags)),
                        json.dumps(h.bins)) for h in run.parsed.histograms]
        outputs += [(run_id, name, zlib.compress(text.encode(), 6))
                    for name, text in run.outputs.items()]
        if run.status is Status.OK and not run.warmup:
            for h in run.parsed.histograms:
                key = (run.target, run.workload, params, h.name, h.unit,
                       canonical_json(dict(h.tags)))
                counts[key] = counts.get(key, 0) + 1
                bins = totals.setdefault(key, {})
                for value, count in h.bins:
                    bins[value] = bins.get(value, 0) + count
    _put(db, "runs", "id, experiment_id, target, workload, params, case_key, repetition,"
         " warmup, status, started, ended, argv, exit_code, error, annotations, uuid,"
         " fingerprint", runs)
    _put(db, "metrics_json", "run_id, metrics", metrics_json)
    _put(db, "metrics", "run_id, name, value, unit, tags, note", metrics)
    _put(db, "series", "run_id, name, unit, tags, points", series)
    _put(db, "histograms", "run_id, name, unit, tags, bins", histograms)
    _put(db, "outputs", "run_id, name, content", outputs)
    db.executemany("INSERT OR IGNORE INTO metric_kinds (experiment_id, name, unit)"
                   " VALUES (?, ?, ?)", sorted(kinds))
    _add_totals(db, experiment_id, totals, counts)


def _add_totals(db: schema.Connection, experiment_id: int,
                totals: dict[tuple[str, str, str, str, str, str], dict[float, int]],
                counts: dict[tuple[str, str, str, str, str, str], int]) -> None:
    """Merge the batch's histogram sums into the stored per-case totals."""
    if not totals:
        return
    # The table's key leaves out the unit.
    by_key = {(k[0], k[1], k[2], k[3], k[5]): k for k in totals}
    for target, workload, params, name, tags, runs, bins in db.execute(
            "SELECT target, workload, params, name, tags, runs, bins FROM"
            " histogram_totals WHERE experiment_id = ?", (experiment_id,)).fetchall():
        key = by_key.get((target, workload, params, name, tags))
        if key is None:
            continue
        counts[key] += int(runs)
        merged = totals[key]
        for value, count in json.loads(bins):
            merged[float(value)] = merged.get(float(value), 0) + int(count)
    rows: list[tuple[Any, ...]] = [
        (experiment_id, *key, counts[key], json.dumps(sorted(bins.items())))
        for key, bins in totals.items()]
    db.executemany("INSERT OR REPLACE INTO histogram_totals (experiment_id, target, workload,"
                   " params, name, unit, tags, runs, bins) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   rows)


RUN_COLUMNS = ("target, workload, params, case_key, repetition, warmup, status, started,"
               " ended, argv, exit_code, error, annotations, uuid, fingerprint")
# The tables that hang off a run, and their columns besides run_id.
RUN_TABLES = (("metrics_json", "metrics"), ("metrics", "name, value, unit, tags, note"),
              ("series", "name, unit, tags, points"), ("histograms", "name, unit, tags, bins"),
              ("outputs", "name, content"))
CHUNK = 1000


def copy_runs(source: schema.Connection, destination: schema.Connection, source_exp: int,
              target_exp: int, run_ids: Sequence[int], *, whole: bool) -> None:
    """Copy runs `run_ids` of `source_exp` as they are stored (no JSON parsed or written
    again) into `target_exp`; commits nothing. `whole`: the target experiment is new and
    gets every run, so the source's per-case totals and metric kinds are copied as they
    are; otherwise the new runs' histograms are added to the target's totals."""
    ordered = sorted(run_ids)
    remap = dict(zip(ordered, _new_ids(destination, len(ordered)), strict=True))
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start:start + CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = source.execute(f"SELECT id, {RUN_COLUMNS} FROM runs WHERE id IN ({marks})"
                              " ORDER BY id", chunk).fetchall()
        _put(destination, "runs", f"id, experiment_id, {RUN_COLUMNS}",
             [(remap[r[0]], target_exp, *r[1:]) for r in rows])
        for table, columns in RUN_TABLES:
            order = "rowid" if table in ("metrics", "histograms", "outputs") else "run_id"
            rows = source.execute(f"SELECT run_id, {columns} FROM {table} WHERE run_id IN"
                                  f" ({marks}) ORDER BY {order}", chunk).fetchall()
            _put(destination, table, f"run_id, {columns}",
                 [(remap[r[0]], *r[1:]) for r in rows])
    kinds = source.execute("SELECT name, unit FROM metric_kinds WHERE experiment_id = ?",
                           (source_exp,)).fetchall()
    destination.executemany("INSERT OR IGNORE INTO metric_kinds (experiment_id, name, unit)"
                            " VALUES (?, ?, ?)", [(target_exp, *k) for k in kinds])
    if whole:
        rows = source.execute("SELECT target, workload, params, name, unit, tags, runs, bins"
                              " FROM histogram_totals WHERE experiment_id = ? ORDER BY rowid",
                              (source_exp,)).fetchall()
        _put(destination, "histogram_totals",
             "experiment_id, target, workload, params, name, unit, tags, runs, bins",
             [(target_exp, *r) for r in rows])
        return
    _add_run_totals(source, destination, target_exp, ordered)


def _add_run_totals(source: schema.Connection, destination: schema.Connection,
                    target_exp: int, run_ids: list[int]) -> None:
    totals: dict[tuple[str, str, str, str, str, str], dict[float, int]] = {}
    counts: dict[tuple[str, str, str, str, str, str], int] = {}
    for start in range(0, len(run_ids), CHUNK):
        chunk = run_ids[start:start + CHUNK]
        marks = ",".join("?" * len(chunk))
        for target, workload, params, name, unit, tags, bins in source.execute(
                "SELECT r.target, r.workload, r.params, h.name, h.unit, h.tags, h.bins FROM"
                " histograms h JOIN runs r ON r.id = h.run_id WHERE r.status = 'ok' AND"
                f" r.warmup = 0 AND r.id IN ({marks})", chunk):
            key = (target, workload, params, name, unit, tags)
            counts[key] = counts.get(key, 0) + 1
            merged = totals.setdefault(key, {})
            for value, count in json.loads(bins):
                merged[float(value)] = merged.get(float(value), 0) + int(count)
    _add_totals(destination, target_exp, totals, counts)
