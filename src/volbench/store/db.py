"""Results in SQLite or PostgreSQL: every run is committed the moment it ends.

One Store over both backends (location.py picks by --db): SQLite is the default and
the reference, PostgreSQL (pg.py) takes the same SQL for a team's shared store. The
schema is versioned and upgraded by numbered migrations (schema.py); a database from a
newer volbench is refused instead of misread. Raw outputs are kept verbatim
(zlib-compressed) next to the parsed metrics, so a parser fix can re-read old runs.
Experiments and runs carry UUIDs, so push/pull (sync.py) copies each exactly once.
This module opens a store and writes to it; reads.py reads it, sqlitefile.py opens
SQLite files.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from volbench.core.errors import StoreError
from volbench.core.model import Parsed, RunResult, Status, canonical_json
from volbench.store import claims, pg, schema, sqlitefile
from volbench.store.location import Location, PgLocation
from volbench.store.reads import Reads, row_json
from volbench.store.sqlitefile import database_problem
from volbench.system.block import space

__all__ = ["SCHEMA_VERSION", "Store", "database_problem", "opened", "row_json"]

SCHEMA_VERSION = schema.VERSION


class Store(Reads):
    """The results of experiments, in the database at a location (file or URL)."""

    db: schema.Connection

    def __init__(self, path: Location, *, create: bool = True, read_only: bool = False
                 ) -> None:
        """`read_only`: never write to the file (reports); implies not creating it.

        A PostgreSQL location is connected to and brought to the current schema (in
        the schema `volbench`, made if missing); a current one is only read, so a role
        with SELECT alone can report. `read_only` there picks the grants a refusal names."""
        self.path: Location = path
        # Rows left out because a JSON column is damaged: one line each, for the CLI to say.
        self.damaged: list[str] = []
        if isinstance(path, PgLocation):
            self.db = pg.connect(path, writer=not read_only)
            try:
                schema.migrate(self.db, path)
            except BaseException:
                self.db.close()
                raise
            return
        if (problem := sqlitefile.path_problem(path, write=not read_only)) is not None:
            raise StoreError(problem)
        if (read_only or not create) and not path.exists():
            raise StoreError(f"no results database at {path}; run an experiment first "
                             "(volbench run) or point --db at one")
        if read_only:
            self.db = sqlitefile.read_only(path)
            return
        try:
            self.db = sqlite3.connect(path, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}; check the path and permissions") from exc
        try:
            self.db.execute("PRAGMA foreign_keys = ON")
            # WAL + NORMAL: a committed run survives a crash or kill of volbench (the case
            # that matters); only a power loss may drop the last commits.
            sqlitefile.wal(self.db)
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
        """Close the connection (an open transaction is rolled back)."""
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
            if isinstance(self.db, pg.PgConnection) and pg.is_database_error(exc):
                raise StoreError(self.db.problem(exc)) from exc
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
        """Drop this process's claim on the experiment (claims.py)."""
        claims.release(self.db, experiment_id)

    def set_status(self, experiment_id: int, status: str) -> None:
        """Set the experiment's status, committed; any status but running sets finished."""
        with self._writing():
            self.db.execute("UPDATE experiments SET status = ?, finished = ? WHERE id = ?",
                            (status, time.time() if status != "running" else None,
                             experiment_id))


    def save_target(self, experiment_id: int, name: str, type_: str, status: str,
                    info: Mapping[str, Any], error: str = "") -> None:
        """Store (or replace) a target's row: how it was built, or why it failed."""
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
            self.db = pg.connect(self.path, writer=self.db.writer)
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


@contextmanager
def opened(path: Location, *, create: bool = True) -> Iterator[Store]:
    """A Store for the block, closed when it ends, also on an exception."""
    store = Store(path, create=create)
    try:
        yield store
    finally:
        store.close()
