"""Results in SQLite or PostgreSQL: every run is committed the moment it ends.

One Store over both backends (location.py picks by --db): SQLite is the default and
the reference, PostgreSQL (pg.py) takes the same SQL for a team's shared store. The
schema is versioned and upgraded by numbered migrations (schema.py); a database from a
newer volbench is refused instead of misread. Raw outputs are kept verbatim
(zlib-compressed) next to the parsed metrics, so a parser fix can re-read old runs.
Experiments and runs carry UUIDs, so push/pull (sync.py) copies each exactly once.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import uuid
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from volbench.core.bulk import json_many, paused_gc
from volbench.core.errors import StoreError
from volbench.core.model import (
    CaseHistogram,
    ExperimentRow,
    Histogram,
    Metric,
    Parsed,
    RunResult,
    Series,
    Status,
    TargetRow,
    canonical_json,
)
from volbench.store import claims, pg, schema
from volbench.store.location import Location, PgLocation
from volbench.system.block import space

SCHEMA_VERSION = schema.VERSION


def _wal(db: sqlite3.Connection, wait: float = 30.0) -> None:
    """Switch to WAL, waiting for another volbench opening the same new database.

    SQLite answers "database is locked" at once, without its busy handler, when two
    connections change the journal mode together (seen: two experiments started at once
    in one new database), so the wait is done here."""
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Store:
    """The results of experiments, in the database at a location (file or URL)."""

    db: schema.Connection

    def __init__(self, path: Location, *, create: bool = True, read_only: bool = False
                 ) -> None:
        """`read_only`: never write to the file (reports); implies not creating it.

        A PostgreSQL location is connected to and brought to the current schema (in
        the schema `volbench`, made if missing); `read_only` does not apply to it."""
        self.path: Location = path
        # Rows left out because a JSON column is damaged: one line each, for the CLI to say.
        self.damaged: list[str] = []
        if isinstance(path, PgLocation):
            self.db = pg.connect(path)
            try:
                schema.migrate(self.db, path)
            except BaseException:
                self.db.close()
                raise
            return
        if (read_only or not create) and not path.exists():
            raise StoreError(f"no results database at {path}; run an experiment first "
                             "(volbench run) or point --db at one")
        if read_only:
            self.db = _read_only(path)
            return
        try:
            self.db = sqlite3.connect(path, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}; check the path and permissions") from exc
        try:
            self.db.execute("PRAGMA foreign_keys = ON")
            # WAL + NORMAL: a committed run survives a crash or kill of volbench (the case
            # that matters); only a power loss may drop the last commits.
            _wal(self.db)
            self.db.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if space.is_full(path.resolve().parent):  # SQLite says "disk I/O error" then
                raise StoreError(self._full()) from exc
            raise StoreError(database_problem(path, exc)) from exc
        schema.migrate(self.db, path)

    def _full(self) -> str:
        assert isinstance(self.path, Path)
        return space.output_full(
            self.path.resolve().parent, f"the results database {self.path.name}",
            "give --db a path on a larger filesystem; the runs stored so far are kept")

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; a full disk named as such (not a bare OperationalError)."""
        try:
            with self.db:
                yield
        except sqlite3.OperationalError as exc:
            if "full" not in str(exc):
                raise
            raise StoreError(self._full()) from exc
        except Exception as exc:
            if isinstance(self.path, PgLocation) and pg.is_database_error(exc):
                raise StoreError(pg.server_problem(self.path, exc)) from exc
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------
    def begin_experiment(self, name: str, spec_hash: str, document: Mapping[str, Any],
                         environment: Mapping[str, Any], seed: int | None, *,
                         claim: bool = False, series: str = "") -> int:
        """A new experiment row; with `claim`, claimed by this process (claims.py).
        `series`: the experiment file's history key ("" = followed by name)."""
        found = self._begin(name, spec_hash, document, environment, seed, claim, False,
                            series)
        assert found is not None
        return found

    def begin_if_new(self, name: str, spec_hash: str, document: Mapping[str, Any],
                     environment: Mapping[str, Any], seed: int | None, *, series: str = ""
                     ) -> int | None:
        """A new claimed experiment, or None when one with this spec exists by now (two
        `--resume` of a new experiment at once: the second then resumes the first's)."""
        return self._begin(name, spec_hash, document, environment, seed, True, True, series)

    def _begin(self, name: str, spec_hash: str, document: Mapping[str, Any],
               environment: Mapping[str, Any], seed: int | None, claim: bool,
               only_new: bool, series: str) -> int | None:
        with self._writing():
            if only_new:
                # The write lock from the look to the insert: nobody adds one in between.
                self.db.execute("BEGIN IMMEDIATE")
                if self.db.execute("SELECT 1 FROM experiments WHERE spec_hash = ?",
                                   (spec_hash,)).fetchone():
                    return None
            cur = self.db.execute(
                "INSERT INTO experiments (name, spec_hash, document, environment, seed, created,"
                " status, uuid, host, series) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (name, spec_hash, canonical_json(document), canonical_json(environment), seed,
                 time.time(), str(uuid.uuid4()),
                 str(environment.get("hostname") or socket.gethostname()), series))
            assert cur.lastrowid is not None
            if claim:  # in the same transaction: a --resume elsewhere cannot slip in between
                claims.insert(self.db, cur.lastrowid, claims.me())
        return cur.lastrowid

    def claim(self, experiment_id: int, *, take_over: bool = False) -> str | None:
        """Claim an existing experiment for this process (claims.py)."""
        row = self.experiment(experiment_id)
        return claims.claim(self.db, experiment_id,
                            f"experiment {row.id} ({row.name}) in {self.path}",
                            take_over=take_over)

    def release(self, experiment_id: int) -> None:
        claims.release(self.db, experiment_id)

    def set_status(self, experiment_id: int, status: str) -> None:
        with self._writing():
            self.db.execute("UPDATE experiments SET status = ?, finished = ? WHERE id = ?",
                            (status, time.time() if status != "running" else None,
                             experiment_id))

    def find_resumable(self, spec_hash: str) -> ExperimentRow | None:
        """The latest experiment with this exact spec (for --resume)."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE spec_hash = ? ORDER BY id DESC LIMIT 1",
            (spec_hash,)).fetchone()
        return _experiment(row, self.damaged, self.path) if row else None

    def save_target(self, experiment_id: int, name: str, type_: str, status: str,
                    info: Mapping[str, Any], error: str = "") -> None:
        with self._writing():
            self.db.execute(
                "INSERT OR REPLACE INTO targets (experiment_id, name, type, status, error, info,"
                " built) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (experiment_id, name, type_, status, error, canonical_json(info), time.time()))

    def save_fingerprint(self, fingerprint: Mapping[str, Any], digest: str) -> str:
        """Store a run environment's fingerprint once (by `digest`); returns the digest."""
        with self._writing():
            self.db.execute("INSERT OR IGNORE INTO fingerprints (digest, document)"
                            " VALUES (?, ?)", (digest, canonical_json(dict(fingerprint))))
        return digest

    def fingerprints(self, experiment_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Run id -> its fingerprint (runs stored without one are left out)."""
        ids = list(experiment_ids)
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT r.id, f.document FROM runs r JOIN fingerprints f ON f.digest ="
            f" r.fingerprint WHERE r.experiment_id IN ({marks})", ids).fetchall()
        return {int(r[0]): json.loads(r[1]) for r in rows}

    def save_run(self, experiment_id: int, run: RunResult, *, fingerprint: str = "",
                 run_uuid: str | None = None) -> int:
        """Insert one run with everything it produced, in one transaction: the run is
        stored whole or not at all. `fingerprint`: the digest save_fingerprint gave.

        A PostgreSQL connection lost on the way is opened again and the run stored once
        (its UUID tells whether the lost commit made it); if the server stays away the
        error says so and that --resume continues."""
        run_uuid = run_uuid or str(uuid.uuid4())
        try:
            with self._writing():
                return self.insert_run(experiment_id, run, fingerprint=fingerprint,
                                       run_uuid=run_uuid)
        except StoreError:
            if not self._reconnected():
                raise
        found = self.db.execute("SELECT id FROM runs WHERE uuid = ?", (run_uuid,)).fetchone()
        if found is not None:
            return int(found[0])
        with self._writing():
            return self.insert_run(experiment_id, run, fingerprint=fingerprint,
                                   run_uuid=run_uuid)

    def _reconnected(self) -> bool:
        """After an error: True if it was a lost PostgreSQL connection, now open again."""
        if not isinstance(self.db, pg.PgConnection) or not self.db.lost:
            return False
        assert isinstance(self.path, PgLocation)
        try:
            self.db = pg.connect(self.path)
        except StoreError:
            return False
        return True

    def insert_run(self, experiment_id: int, run: RunResult, *, fingerprint: str = "",
                   run_uuid: str | None = None) -> int:
        """save_run inside the caller's transaction (push copies a whole experiment in
        one); commits nothing."""
        cur = self.db.execute(
            "INSERT INTO runs (experiment_id, target, workload, params, case_key, repetition,"
            " warmup, status, started, ended, argv, exit_code, error, annotations, uuid,"
            " fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (experiment_id, run.target, run.workload, canonical_json(dict(run.params)),
             run.case_key, run.repetition, int(run.warmup), str(run.status), run.started,
             run.ended, json.dumps(list(run.argv)), run.exit_code, run.error,
             canonical_json(dict(run.annotations)), run_uuid or str(uuid.uuid4()),
             fingerprint))
        run_id = cur.lastrowid
        assert run_id is not None
        self.db.execute(
            "INSERT INTO metrics_json (run_id, metrics) VALUES (?, ?)",
            (run_id, json.dumps([m.to_json() for m in run.metrics], separators=(",", ":"))))
        self._save_parsed(run_id, run.parsed)
        self.db.executemany(
            "INSERT OR IGNORE INTO metric_kinds (experiment_id, name, unit) VALUES (?, ?, ?)",
            {(experiment_id, m.name, m.unit) for m in run.parsed.metrics})
        if run.status is Status.OK and not run.warmup:
            params = canonical_json(dict(run.params))
            for h in run.parsed.histograms:
                schema.add_to_totals(self.db, (experiment_id, run.target, run.workload,
                                               params, h.name, h.unit,
                                               canonical_json(dict(h.tags))), list(h.bins))
        self.db.executemany(
            "INSERT INTO outputs (run_id, name, content) VALUES (?, ?, ?)",
            [(run_id, name, zlib.compress(text.encode(), 6))
             for name, text in run.outputs.items()])
        return run_id

    def _save_parsed(self, run_id: int, parsed: Parsed) -> None:
        self.db.executemany(
            "INSERT INTO metrics (run_id, name, value, unit, tags, note) VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, m.name, m.value, m.unit, canonical_json(dict(m.tags)), m.note)
             for m in parsed.metrics])
        self.db.executemany(
            "INSERT INTO series (run_id, name, unit, tags, points) VALUES (?, ?, ?, ?, ?)",
            [(run_id, s.name, s.unit, canonical_json(dict(s.tags)), json.dumps(s.points))
             for s in parsed.series])
        self.db.executemany(
            "INSERT INTO histograms (run_id, name, unit, tags, bins) VALUES (?, ?, ?, ?, ?)",
            [(run_id, h.name, h.unit, canonical_json(dict(h.tags)), json.dumps(h.bins))
             for h in parsed.histograms])

    # -- reading ----------------------------------------------------------------------
    def experiments(self) -> list[ExperimentRow]:
        return [_experiment(r, self.damaged, self.path)
                for r in self.db.execute("SELECT * FROM experiments ORDER BY id")]

    def experiment(self, experiment_id: int) -> ExperimentRow:
        row = self.db.execute("SELECT * FROM experiments WHERE id = ?",
                              (experiment_id,)).fetchone()
        if row is None:
            raise StoreError(f"no experiment {experiment_id} in {self.path}; "
                             "`volbench report --list` shows what is there")
        return _experiment(row, self.damaged, self.path)

    def targets(self, experiment_id: int) -> list[TargetRow]:
        rows = self.db.execute(
            "SELECT experiment_id, name, type, status, error, info FROM targets"
            " WHERE experiment_id = ? ORDER BY rowid", (experiment_id,))
        return [TargetRow(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def finished_keys(self, experiment_id: int, *, retry_failed: bool = False
                      ) -> set[tuple[str, int, bool]]:
        """Runs --resume skips: finished ones, or with `retry_failed` only the ok ones."""
        rows = self.db.execute(
            "SELECT case_key, repetition, warmup, status FROM runs WHERE experiment_id = ?",
            (experiment_id,))
        return {(r[0], r[1], bool(r[2])) for r in rows
                if (Status(r[3]) is Status.OK if retry_failed else Status(r[3]).finished)}

    def count_runs(self, experiment_id: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM runs WHERE experiment_id = ?",
                                   (experiment_id,)).fetchone()[0])

    def runs(self, experiment_ids: Iterable[int], *, outputs: bool = False,
             series: bool = False, histograms: bool = False,
             metric_names: Collection[str] | None = None) -> list[RunResult]:
        """Runs with their metrics (all, or only `metric_names`) and optionally raw
        outputs, series and per-run histograms."""
        ids = list(experiment_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with paused_gc():
            rows = self.db.execute(
                f"SELECT id, target, workload, params, repetition, warmup, status, started,"
                f" ended, argv, exit_code, error, annotations FROM runs"
                f" WHERE experiment_id IN ({marks}) ORDER BY id", ids).fetchall()
            metrics = self._metrics_by_run(marks, ids, metric_names)
            extra_series = self._series_by_run(marks, ids) if series else {}
            extra_hists = self._histograms_by_run(marks, ids) if histograms else {}
            extra_outputs = self._outputs_by_run(marks, ids) if outputs else {}
            argvs = json_many([r[9] for r in rows])
            annotations = json_many([r[12] for r in rows])
            # Repetitions of a case share their parameters: parse each distinct text once.
            params_cache: dict[str, dict[str, Any]] = {}
            result = []
            for r, argv, notes in zip(rows, argvs, annotations, strict=True):
                run_id = r[0]
                params = params_cache.get(r[3])
                if params is None:
                    params = row_json(r[3], "runs", run_id, "params", self.damaged, self.path)
                    if params is None:
                        continue  # left out of every report; self.damaged says which
                    params_cache[r[3]] = params
                notes["run_id"] = run_id
                parsed = Parsed(tuple(metrics.get(run_id, ())),
                                tuple(extra_series.get(run_id, ())),
                                tuple(extra_hists.get(run_id, ())))
                result.append(RunResult(
                    target=r[1], workload=r[2], params=params, repetition=r[4],
                    warmup=bool(r[5]), status=Status(r[6]), started=r[7], ended=r[8],
                    argv=tuple(argv), exit_code=r[10], error=r[11], parsed=parsed,
                    outputs=extra_outputs.get(run_id, {}), annotations=notes))
        return result

    def metric_kinds(self, experiment_ids: Iterable[int]) -> set[tuple[str, str]]:
        """The (name, unit) pairs these experiments' runs have."""
        ids = list(experiment_ids)
        marks = ",".join("?" * len(ids))
        return {(r[0], r[1]) for r in self.db.execute(
            f"SELECT name, unit FROM metric_kinds WHERE experiment_id IN ({marks})", ids)}

    def histogram_totals(self, experiment_ids: Iterable[int]) -> list[CaseHistogram]:
        """Per case, every finished measured run's latency histogram added up."""
        ids = list(experiment_ids)
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT target, workload, params, name, unit, tags, runs, bins FROM"
            f" histogram_totals WHERE experiment_id IN ({marks}) ORDER BY rowid", ids).fetchall()
        all_bins = json_many([r[7] for r in rows])
        totals = []
        for (target, workload, params, name, unit, tags, runs, _), bins in zip(
                rows, all_bins, strict=True):
            totals.append(CaseHistogram(target, workload, json.loads(params), name, unit,
                                        json.loads(tags), runs,
                                        tuple((float(v), int(c)) for v, c in bins)))
        return totals

    def runs_json(self, experiment_ids: Iterable[int]) -> Iterator[str]:
        """Each run as a JSON object (the report's run shape, with every metric), put
        together by SQLite from stored JSON pieces (see schema v2, metrics_json)."""
        ids = list(experiment_ids)
        if isinstance(self.db, pg.PgConnection):
            yield from pg.runs_json(self.db, ids)
            return
        marks = ",".join("?" * len(ids))
        # Concatenated as text: params, argv and the metrics are stored as compact JSON
        # already, and json()/json_object would parse every one of them again.
        query = (
            """SELECT '{"target":' || json_quote(r.target)"""
            """ || ',"workload":' || json_quote(r.workload) || ',"params":' || r.params"""
            """ || ',"repetition":' || r.repetition"""
            """ || ',"warmup":' || CASE r.warmup WHEN 0 THEN 'false' ELSE 'true' END"""
            """ || ',"status":' || json_quote(r.status) || ',"started":' || json_quote(r.started)"""
            """ || ',"ended":' || json_quote(r.ended) || ',"argv":' || r.argv"""
            """ || ',"exit_code":' || ifnull(r.exit_code, 'null')"""
            """ || ',"error":' || json_quote(r.error)"""
            """ || ',"annotations":' || json_set(r.annotations, '$.run_id', r.id)"""
            """ || ',"metrics":' || ifnull(j.metrics, '[]') || '}'"""
            # NOT INDEXED: walk runs in rowid (= run) order; through the experiment index
            # SQLite would sort all the text in a temporary B-tree (9.7 s on 100 000 runs).
            f" FROM runs r NOT INDEXED LEFT JOIN metrics_json j ON j.run_id = r.id"
            f" WHERE r.experiment_id IN ({marks}) ORDER BY r.id")
        for (text,) in self.db.execute(query, ids):
            yield text

    def metric_rows(self, experiment_ids: Iterable[int]
                    ) -> Iterator[tuple[str, str, str, int, str, float | None, str, str, str]]:
        """(target, workload, params, repetition, name, value, unit, tags, note) of every
        metric of every finished measured run, in run order, straight from SQLite."""
        ids = list(experiment_ids)
        marks = ",".join("?" * len(ids))
        yield from self.db.execute(
            f"SELECT r.target, r.workload, r.params, r.repetition, m.name, m.value, m.unit,"
            f" m.tags, m.note FROM runs r NOT INDEXED JOIN metrics m ON m.run_id = r.id"
            f" WHERE r.experiment_id IN ({marks}) AND r.status = 'ok' AND r.warmup = 0"
            f" ORDER BY r.id, m.rowid", ids)

    def _metrics_by_run(self, marks: str, ids: list[int],
                        names: Collection[str] | None = None) -> dict[int, list[Metric]]:
        out: dict[int, list[Metric]] = {}
        tag_cache: dict[str, dict[str, str]] = {}
        query = (f"SELECT m.run_id, m.name, m.value, m.unit, m.tags, m.note FROM metrics m"
                 f" JOIN runs r ON r.id = m.run_id WHERE r.experiment_id IN ({marks})")
        args: list[Any] = list(ids)
        if names is not None:
            # The JOIN form lets SQLite walk metrics_by_name; `run_id IN (subquery)` was 8×
            # slower on 100 000 runs.
            query += f" AND m.name IN ({','.join('?' * len(names))})"
            args += sorted(names)
        for run_id, name, value, unit, tags, note in self.db.execute(query, args):
            parsed_tags = tag_cache.get(tags)
            if parsed_tags is None:
                parsed_tags = tag_cache[tags] = json.loads(tags)
            out.setdefault(run_id, []).append(Metric(name, value, unit, parsed_tags, note))
        return out

    def _series_by_run(self, marks: str, ids: list[int]) -> dict[int, list[Series]]:
        rows = self.db.execute(
            f"SELECT s.run_id, s.name, s.unit, s.tags, s.points FROM series s JOIN runs r"
            f" ON r.id = s.run_id WHERE r.experiment_id IN ({marks}) ORDER BY s.id",
            ids).fetchall()
        points = json_many([row[4] for row in rows])
        tags = json_many([row[3] for row in rows])
        out: dict[int, list[Series]] = {}
        for (run_id, name, unit, _, _), pts, tag in zip(rows, points, tags, strict=True):
            pairs = tuple((float(t), float(v)) for t, v in pts)
            out.setdefault(run_id, []).append(Series(name, unit, pairs, tag))
        return out

    def _histograms_by_run(self, marks: str, ids: list[int]) -> dict[int, list[Histogram]]:
        out: dict[int, list[Histogram]] = {}
        for run_id, name, unit, tags, bins in self.db.execute(
                f"SELECT h.run_id, h.name, h.unit, h.tags, h.bins FROM histograms h JOIN runs r"
                f" ON r.id = h.run_id WHERE r.experiment_id IN ({marks})", ids):
            pairs = tuple((float(b[0]), int(b[1])) for b in json.loads(bins))
            out.setdefault(run_id, []).append(Histogram(name, unit, pairs, json.loads(tags)))
        return out

    def _outputs_by_run(self, marks: str, ids: list[int]) -> dict[int, dict[str, str]]:
        out: dict[int, dict[str, str]] = {}
        for run_id, name, content in self.db.execute(
                f"SELECT o.run_id, o.name, o.content FROM outputs o JOIN runs r"
                f" ON r.id = o.run_id WHERE r.experiment_id IN ({marks})", ids):
            out.setdefault(run_id, {})[name] = zlib.decompress(content).decode(errors="replace")
        return out


def database_problem(path: Path | None, exc: sqlite3.DatabaseError) -> str:
    """One line for an SQLite error, naming the database and the fix."""
    name = str(path) if path is not None else "the results database"
    detail = str(exc)
    if "readonly" in detail or "read-only" in detail:
        return (f"cannot write to {name} ({detail}); make it writable or point --db at "
                "another file")
    if "locked" in detail or "busy" in detail:
        return f"{name} is busy ({detail}); wait for the other volbench to finish"
    if "not a database" in detail:
        return f"{name} is not a volbench database ({detail}); check the path (--db)"
    if "full" in detail and path is not None:
        # SQLite's "database or disk is full": the database is fine; freeing space and
        # --resume completes the experiment (docs/safety.md, A full disk).
        return space.output_full(path.absolute().parent, f"the results database {path.name}",
                                 "give --db a path on a larger filesystem, then run with "
                                 "--resume; the runs stored so far are kept")
    return (f"{name} is damaged ({detail}); restore it from a copy, or see what is wrong "
            f"with: sqlite3 {name} 'PRAGMA integrity_check'")


def _connect_read_only(path: Path, query: str) -> tuple[sqlite3.Connection, int]:
    db = sqlite3.connect(path.absolute().as_uri() + query, uri=True, timeout=30)
    try:
        return db, int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError:
        db.close()
        raise


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot change the file. A database of an older schema is
    upgraded in a copy in memory, so reading it leaves the file as it was."""
    try:
        db, version = _connect_read_only(path, "?mode=ro")
    except sqlite3.DatabaseError as exc:
        try:
            # A WAL database in a folder this user cannot write: SQLite cannot create the
            # shared-memory file readers need. Read the file as it is instead (what a
            # writer has not checkpointed into it yet is not seen).
            db, version = _connect_read_only(path, "?mode=ro&immutable=1")
        except sqlite3.DatabaseError:
            raise StoreError(database_problem(path, exc)) from exc
    if version < SCHEMA_VERSION:
        memory = sqlite3.connect(":memory:")
        db.backup(memory)
        db.close()
        db = memory
    schema.migrate(db, path)
    return db


def row_json(text: str, table: str, row_id: int, column: str, damaged: list[str],
             path: Location, outcome: str = "the run is left out of reports") -> Any:
    """A JSON column's value; for text that is not JSON (a hand-edited or damaged row)
    None, with a line naming the row and what to do added to `damaged`."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        delete = f"DELETE FROM {table} WHERE id = {row_id}"
        how = (f"sqlite3 {path} '{delete}'" if isinstance(path, Path)
               else f"psql: {delete.replace('FROM ', 'FROM volbench.')}")
        damaged.append(f"{path}: {table} row {row_id}: {column} is damaged (not JSON: "
                       f"{exc}); {outcome}; restore it from a copy, or delete the row: {how}")
        return None


def _experiment(row: tuple[Any, ...], damaged: list[str], path: Location) -> ExperimentRow:
    """An experiment row; a damaged document or environment reads as {} (so its runs
    still report), named in `damaged`."""
    read_as = "read as empty (the experiment's runs still report)"
    document = row_json(row[3], "experiments", row[0], "document", damaged, path, read_as)
    environment = row_json(row[4], "experiments", row[0], "environment", damaged, path,
                           read_as)
    return ExperimentRow(row[0], row[1], row[2], document if isinstance(document, dict) else {},
                         environment if isinstance(environment, dict) else {},
                         row[5], row[6], row[7], row[8])


@contextmanager
def opened(path: Location, *, create: bool = True) -> Iterator[Store]:
    store = Store(path, create=create)
    try:
        yield store
    finally:
        store.close()
