"""Results in SQLite: every run is committed the moment it ends.

The schema is versioned with PRAGMA user_version and upgraded by numbered
migrations; a database from a newer volbench is refused instead of misread.
Raw outputs are kept verbatim (zlib-compressed) next to the parsed metrics, so a
parser fix can re-read old runs.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.errors import StoreError
from volbench.model import (
    Histogram,
    Metric,
    Parsed,
    RunResult,
    Series,
    Status,
    canonical_json,
)

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE experiments (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        spec_hash TEXT NOT NULL,
        document TEXT NOT NULL,
        environment TEXT NOT NULL,
        seed INTEGER,
        created REAL NOT NULL,
        finished REAL,
        status TEXT NOT NULL
    );
    CREATE TABLE targets (
        experiment_id INTEGER NOT NULL REFERENCES experiments(id),
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT NOT NULL DEFAULT '',
        info TEXT NOT NULL,
        built REAL NOT NULL,
        PRIMARY KEY (experiment_id, name)
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiments(id),
        target TEXT NOT NULL,
        workload TEXT NOT NULL,
        params TEXT NOT NULL,
        case_key TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        warmup INTEGER NOT NULL,
        status TEXT NOT NULL,
        started REAL NOT NULL,
        ended REAL NOT NULL,
        argv TEXT NOT NULL,
        exit_code INTEGER,
        error TEXT NOT NULL,
        annotations TEXT NOT NULL
    );
    CREATE INDEX runs_by_experiment ON runs (experiment_id, case_key);
    CREATE TABLE metrics (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        tags TEXT NOT NULL,
        note TEXT NOT NULL
    );
    CREATE INDEX metrics_by_run ON metrics (run_id);
    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        tags TEXT NOT NULL
    );
    CREATE INDEX series_by_run ON series (run_id);
    CREATE TABLE series_points (
        series_id INTEGER NOT NULL REFERENCES series(id),
        t REAL NOT NULL,
        value REAL NOT NULL
    );
    CREATE INDEX points_by_series ON series_points (series_id);
    CREATE TABLE histograms (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        tags TEXT NOT NULL,
        bins TEXT NOT NULL
    );
    CREATE INDEX histograms_by_run ON histograms (run_id);
    CREATE TABLE outputs (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class ExperimentRow:
    id: int
    name: str
    spec_hash: str
    document: dict[str, Any]
    environment: dict[str, Any]
    seed: int | None
    created: float
    finished: float | None
    status: str


@dataclass(frozen=True)
class TargetRow:
    experiment_id: int
    name: str
    type: str
    status: str
    error: str
    info: dict[str, Any]


class Store:
    def __init__(self, path: Path, *, create: bool = True) -> None:
        if not create and not path.exists():
            raise StoreError(f"no results database at {path}; run an experiment first "
                             "(volbench run) or point --db at one")
        self.path = path
        try:
            self.db = sqlite3.connect(path, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}; check the path and permissions") from exc
        self.db.execute("PRAGMA foreign_keys = ON")
        # WAL + NORMAL: a committed run survives a crash or kill of volbench (the case
        # that matters); only a power loss may drop the last commits.
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self._migrate()

    def _migrate(self) -> None:
        try:
            version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a volbench database: {exc}") from exc
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema {version}, newer than this volbench "
                             f"({SCHEMA_VERSION}); upgrade volbench to read it")
        for number in range(version, SCHEMA_VERSION):
            with self.db:
                self.db.executescript(MIGRATIONS[number])
                self.db.execute(f"PRAGMA user_version = {number + 1}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------
    def begin_experiment(self, name: str, spec_hash: str, document: Mapping[str, Any],
                         environment: Mapping[str, Any], seed: int | None) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO experiments (name, spec_hash, document, environment, seed, created,"
                " status) VALUES (?, ?, ?, ?, ?, ?, 'running')",
                (name, spec_hash, canonical_json(document), canonical_json(environment), seed,
                 time.time()))
        assert cur.lastrowid is not None
        return cur.lastrowid

    def set_status(self, experiment_id: int, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE experiments SET status = ?, finished = ? WHERE id = ?",
                            (status, time.time() if status != "running" else None,
                             experiment_id))

    def find_resumable(self, spec_hash: str) -> ExperimentRow | None:
        """The latest experiment with this exact spec (for --resume)."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE spec_hash = ? ORDER BY id DESC LIMIT 1",
            (spec_hash,)).fetchone()
        return _experiment(row) if row else None

    def save_target(self, experiment_id: int, name: str, type_: str, status: str,
                    info: Mapping[str, Any], error: str = "") -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO targets (experiment_id, name, type, status, error, info,"
                " built) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (experiment_id, name, type_, status, error, canonical_json(info), time.time()))

    def save_run(self, experiment_id: int, run: RunResult) -> int:
        """Insert one run with everything it produced, in one transaction."""
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (experiment_id, target, workload, params, case_key, repetition,"
                " warmup, status, started, ended, argv, exit_code, error, annotations)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (experiment_id, run.target, run.workload, canonical_json(dict(run.params)),
                 run.case_key, run.repetition, int(run.warmup), str(run.status), run.started,
                 run.ended, json.dumps(list(run.argv)), run.exit_code, run.error,
                 canonical_json(dict(run.annotations))))
            run_id = cur.lastrowid
            assert run_id is not None
            self._save_parsed(run_id, run.parsed)
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
        for s in parsed.series:
            cur = self.db.execute(
                "INSERT INTO series (run_id, name, unit, tags) VALUES (?, ?, ?, ?)",
                (run_id, s.name, s.unit, canonical_json(dict(s.tags))))
            self.db.executemany(
                "INSERT INTO series_points (series_id, t, value) VALUES (?, ?, ?)",
                [(cur.lastrowid, t, v) for t, v in s.points])
        self.db.executemany(
            "INSERT INTO histograms (run_id, name, unit, tags, bins) VALUES (?, ?, ?, ?, ?)",
            [(run_id, h.name, h.unit, canonical_json(dict(h.tags)), json.dumps(h.bins))
             for h in parsed.histograms])

    # -- reading ----------------------------------------------------------------------
    def experiments(self) -> list[ExperimentRow]:
        return [_experiment(r) for r in self.db.execute("SELECT * FROM experiments ORDER BY id")]

    def experiment(self, experiment_id: int) -> ExperimentRow:
        row = self.db.execute("SELECT * FROM experiments WHERE id = ?",
                              (experiment_id,)).fetchone()
        if row is None:
            raise StoreError(f"no experiment {experiment_id} in {self.path}; "
                             "`volbench report --list` shows what is there")
        return _experiment(row)

    def targets(self, experiment_id: int) -> list[TargetRow]:
        rows = self.db.execute(
            "SELECT experiment_id, name, type, status, error, info FROM targets"
            " WHERE experiment_id = ? ORDER BY rowid", (experiment_id,))
        return [TargetRow(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def finished_keys(self, experiment_id: int) -> set[tuple[str, int, bool]]:
        rows = self.db.execute(
            "SELECT case_key, repetition, warmup, status FROM runs WHERE experiment_id = ?",
            (experiment_id,))
        return {(r[0], r[1], bool(r[2])) for r in rows if Status(r[3]).finished}

    def count_runs(self, experiment_id: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM runs WHERE experiment_id = ?",
                                   (experiment_id,)).fetchone()[0])

    def runs(self, experiment_ids: Iterable[int], *, outputs: bool = False,
             series: bool = False, histograms: bool = False) -> list[RunResult]:
        """Runs with their metrics (and optionally raw outputs, series and histograms)."""
        ids = list(experiment_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT id, target, workload, params, repetition, warmup, status, started, ended,"
            f" argv, exit_code, error, annotations FROM runs WHERE experiment_id IN ({marks})"
            f" ORDER BY id", ids).fetchall()
        metrics = self._metrics_by_run(marks, ids)
        extra_series = self._series_by_run(marks, ids) if series else {}
        extra_hists = self._histograms_by_run(marks, ids) if histograms else {}
        extra_outputs = self._outputs_by_run(marks, ids) if outputs else {}
        result = []
        for r in rows:
            run_id = r[0]
            parsed = Parsed(tuple(metrics.get(run_id, ())), tuple(extra_series.get(run_id, ())),
                            tuple(extra_hists.get(run_id, ())))
            result.append(RunResult(
                target=r[1], workload=r[2], params=json.loads(r[3]), repetition=r[4],
                warmup=bool(r[5]), status=Status(r[6]), started=r[7], ended=r[8],
                argv=tuple(json.loads(r[9])), exit_code=r[10], error=r[11],
                parsed=parsed, outputs=extra_outputs.get(run_id, {}),
                annotations={**json.loads(r[12]), "run_id": run_id}))
        return result

    def _metrics_by_run(self, marks: str, ids: list[int]) -> dict[int, list[Metric]]:
        out: dict[int, list[Metric]] = {}
        tag_cache: dict[str, dict[str, str]] = {}
        for run_id, name, value, unit, tags, note in self.db.execute(
                f"SELECT m.run_id, m.name, m.value, m.unit, m.tags, m.note FROM metrics m"
                f" JOIN runs r ON r.id = m.run_id WHERE r.experiment_id IN ({marks})", ids):
            parsed_tags = tag_cache.get(tags)
            if parsed_tags is None:
                parsed_tags = tag_cache[tags] = json.loads(tags)
            out.setdefault(run_id, []).append(Metric(name, value, unit, parsed_tags, note))
        return out

    def _series_by_run(self, marks: str, ids: list[int]) -> dict[int, list[Series]]:
        points: dict[int, list[tuple[float, float]]] = {}
        for series_id, t, v in self.db.execute(
                f"SELECT p.series_id, p.t, p.value FROM series_points p JOIN series s"
                f" ON s.id = p.series_id JOIN runs r ON r.id = s.run_id"
                f" WHERE r.experiment_id IN ({marks}) ORDER BY p.series_id, p.t", ids):
            points.setdefault(series_id, []).append((t, v))
        out: dict[int, list[Series]] = {}
        for sid, run_id, name, unit, tags in self.db.execute(
                f"SELECT s.id, s.run_id, s.name, s.unit, s.tags FROM series s JOIN runs r"
                f" ON r.id = s.run_id WHERE r.experiment_id IN ({marks})", ids):
            out.setdefault(run_id, []).append(
                Series(name, unit, tuple(points.get(sid, ())), json.loads(tags)))
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


def _experiment(row: tuple[Any, ...]) -> ExperimentRow:
    return ExperimentRow(row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]),
                         row[5], row[6], row[7], row[8])


@contextmanager
def opened(path: Path, *, create: bool = True) -> Iterator[Store]:
    store = Store(path, create=create)
    try:
        yield store
    finally:
        store.close()
