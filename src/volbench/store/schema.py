"""The results database's schema: numbered migrations, applied in order.

PRAGMA user_version holds the number of migrations applied. A migration is SQL or a
function (when data must be reshaped), and each runs in one transaction with the
version bump, so a database is never left half-migrated. A database with a higher
version than this volbench knows is refused, never misread.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Callable

from volbench.core.errors import StoreError
from volbench.store.pg import PgConnection, no_store, stored_version

# Both backends take the same calls (pg.py rewrites the SQLite forms for PostgreSQL).
Connection = sqlite3.Connection | PgConnection

V1 = """
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
    """


def _v2(db: Connection) -> None:
    """Reading 100 000 runs for a report in seconds, not minutes (bench/report_scale.py).

    - histogram_totals: latency histograms summed per case as runs are saved, so a
      report reads one merged histogram per case instead of every run's bins;
    - metric_kinds: which (name, unit) pairs an experiment has, so a report can ask for
      just the metrics it shows (a covering index by name serves that query);
    - series points packed as one JSON array per series instead of one row per point;
    - metrics_json: each run's metrics as the JSON array the JSON report prints,
      written once when the run is saved. Derived from the metrics rows on purpose: a
      JSON report of 100 000 runs copies 3.7 million metrics, and reading them back
      row by row took 6–7 s of the 10 s budget; the stored text takes about 1.3 s. A
      table of its own, so the runs table stays narrow (in the runs table the 3 KB
      texts made every scan of run metadata 4× slower).

    PostgreSQL stores start at the newest schema: they never held v1 data, so only the
    tables are made there.
    """
    tables = (
        """CREATE TABLE histogram_totals (
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            target TEXT NOT NULL,
            workload TEXT NOT NULL,
            params TEXT NOT NULL,
            name TEXT NOT NULL,
            unit TEXT NOT NULL,
            tags TEXT NOT NULL,
            runs INTEGER NOT NULL,
            bins TEXT NOT NULL,
            PRIMARY KEY (experiment_id, target, workload, params, name, tags))""",
        """CREATE TABLE metric_kinds (
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            name TEXT NOT NULL,
            unit TEXT NOT NULL,
            PRIMARY KEY (experiment_id, name, unit))""",
        # Covering: a report's "these 5 metrics of every run" reads only this index,
        # in name order, instead of hopping through the whole metrics table.
        "CREATE INDEX metrics_by_name ON metrics (name, run_id, value, unit, tags, note)",
        "ALTER TABLE series ADD COLUMN points TEXT NOT NULL DEFAULT '[]'",
        """CREATE TABLE metrics_json (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id),
            metrics TEXT NOT NULL)""",
    )
    for statement in tables:
        _ddl(db, statement)
    if isinstance(db, PgConnection):
        db.execute("DROP TABLE series_points")
        return
    for statement in (
        f"INSERT INTO metrics_json (run_id, metrics) SELECT r.id, ifnull((SELECT"
        f" json_group_array(json({METRIC_JSON})) FROM metrics m WHERE m.run_id = r.id), '[]')"
        " FROM runs r",
        """INSERT OR IGNORE INTO metric_kinds (experiment_id, name, unit)
            SELECT DISTINCT r.experiment_id, m.name, m.unit FROM metrics m
            JOIN runs r ON r.id = m.run_id""",
    ):
        db.execute(statement)
    points: dict[int, list[list[float]]] = {}
    for series_id, t, value in db.execute(
            "SELECT series_id, t, value FROM series_points ORDER BY series_id, t"):
        points.setdefault(series_id, []).append([t, value])
    db.executemany("UPDATE series SET points = ? WHERE id = ?",
                   [(json.dumps(p), sid) for sid, p in points.items()])
    db.execute("DROP TABLE series_points")
    rows = db.execute(
        "SELECT r.experiment_id, r.target, r.workload, r.params, h.name, h.unit, h.tags, h.bins"
        " FROM histograms h JOIN runs r ON r.id = h.run_id"
        " WHERE r.status = 'ok' AND r.warmup = 0 ORDER BY r.id").fetchall()
    for exp, target, workload, params, name, unit, tags, bins in rows:
        add_to_totals(db, (exp, target, workload, params, name, unit, tags),
                      [(float(b[0]), int(b[1])) for b in json.loads(bins)])


# One metrics row as the report's JSON object (note only when there is one), in SQL.
METRIC_JSON = (
    "CASE WHEN m.note = '' THEN json_object('name', m.name, 'value', m.value, 'unit', m.unit,"
    " 'tags', json(m.tags)) ELSE json_object('name', m.name, 'value', m.value, 'unit', m.unit,"
    " 'tags', json(m.tags), 'note', m.note) END")

TotalsKey = tuple[int, str, str, str, str, str, str]


def add_to_totals(db: Connection, key: TotalsKey,
                  bins: list[tuple[float, int]]) -> None:
    """Add one run's histogram to its case's total (experiment, target, workload,
    params, name, unit, tags). save_run calls this for every finished, measured run."""
    exp, target, workload, params, name, unit, tags = key
    row = db.execute(
        "SELECT runs, bins FROM histogram_totals WHERE experiment_id = ? AND target = ?"
        " AND workload = ? AND params = ? AND name = ? AND tags = ?",
        (exp, target, workload, params, name, tags)).fetchone()
    counts: dict[float, int] = {}
    runs = 1
    if row is not None:
        runs += int(row[0])
        counts = {float(v): int(c) for v, c in json.loads(row[1])}
    for value, count in bins:
        counts[value] = counts.get(value, 0) + count
    db.execute(
        "INSERT OR REPLACE INTO histogram_totals (experiment_id, target, workload, params,"
        " name, unit, tags, runs, bins) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (exp, target, workload, params, name, unit, tags, runs,
         json.dumps(sorted(counts.items()))))


# One writer per experiment (claims.py): who runs it now, and since when.
V3 = """
    CREATE TABLE claims (
        experiment_id INTEGER PRIMARY KEY REFERENCES experiments(id),
        host TEXT NOT NULL,
        boot_id TEXT NOT NULL,
        pid INTEGER NOT NULL,
        pid_start INTEGER NOT NULL,
        since REAL NOT NULL
    );
    """



def _v4(db: Connection) -> None:
    """Experiments and runs told apart across hosts (push/pull, pushed twice adds
    nothing): a UUID each and the experiment's host; runs point at their environment
    fingerprint (stored once per distinct fingerprint)."""
    for statement in (
        "ALTER TABLE experiments ADD COLUMN uuid TEXT",
        "ALTER TABLE experiments ADD COLUMN host TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE runs ADD COLUMN uuid TEXT",
        "ALTER TABLE runs ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''",
        """CREATE TABLE fingerprints (
            digest TEXT PRIMARY KEY,
            document TEXT NOT NULL)""",
    ):
        _ddl(db, statement)
    if isinstance(db, sqlite3.Connection):
        for table in ("experiments", "runs"):
            ids = [row[0] for row in db.execute(f"SELECT id FROM {table}")]
            db.executemany(f"UPDATE {table} SET uuid = ? WHERE id = ?",
                           [(str(uuid.uuid4()), i) for i in ids])
        db.execute("UPDATE experiments SET host = ifnull(json_extract(environment,"
                   " '$.hostname'), '')")
    for statement in ("CREATE UNIQUE INDEX experiments_by_uuid ON experiments (uuid)",
                      "CREATE UNIQUE INDEX runs_by_uuid ON runs (uuid)"):
        db.execute(statement)


# Views for dashboards and ad-hoc SQL (docs/store.md): measured runs' metrics with their
# experiment, and one summary row per experiment and case. {time}/{json} differ by backend.
# {series} is empty in version 5's views (the column came with version 6) and
# `e.series,` from version 7 on: a migration's text never changes once shipped.
VIEWS = (
    """CREATE VIEW run_metrics AS
    SELECT e.uuid AS experiment_uuid, e.name AS experiment, e.host, {series}
           {time}(e.created) AS experiment_time, {time}(r.started) AS run_time,
           r.target, r.workload, {json}(r.params) AS params, r.repetition, r.uuid AS run_uuid,
           r.fingerprint, m.name AS metric, m.value, m.unit, {json}(m.tags) AS tags
    FROM runs r JOIN experiments e ON e.id = r.experiment_id JOIN metrics m ON m.run_id = r.id
    WHERE r.status = 'ok' AND r.warmup = 0""",
    """CREATE VIEW experiment_list AS
    SELECT e.uuid AS experiment_uuid, e.name AS experiment, e.host, {series} e.status,
           {time}(e.created) AS created, {time}(e.finished) AS finished,
           (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id) AS runs
    FROM experiments e""",
    """CREATE VIEW case_summary AS
    SELECT experiment_uuid, experiment, host, {bare_series} experiment_time, target, workload,
           {text}(params) AS params, metric, unit, {text}(tags) AS tags, count(value) AS n,
           avg(value) AS mean, min(value) AS min, max(value) AS max
    FROM run_metrics GROUP BY experiment_uuid, experiment, host, {bare_series} experiment_time,
           target, workload, {text}(params), metric, unit, {text}(tags)""",
)


def _views(db: Connection, series: bool) -> None:
    """The views of VIEWS in each backend's time and JSON types, with or without the
    experiments' `series` column."""
    pg_like = isinstance(db, PgConnection)
    words = ({"time": "to_timestamp", "json": "jsonb", "text": "text"} if pg_like else
             {"time": "_unixepoch", "json": "json", "text": ""})
    words |= ({"series": "e.series,", "bare_series": "series,"} if series else
              {"series": "", "bare_series": ""})
    for view in VIEWS:
        text = view.format(**words)
        if not pg_like:  # SQLite: datetime(x, 'unixepoch'); no cast needed for text
            text = re.sub(r"_unixepoch\(([\w.]+)\)", r"datetime(\1, 'unixepoch')", text)
        db.execute(text)


def _v5(db: Connection) -> None:
    """The views of VIEWS (docs/store.md), in each backend's time and JSON types."""
    _views(db, series=False)


def _v6(db: Connection) -> None:
    """The experiment file's `series:` key (docs/store.md): `volbench history` follows
    the experiments that share one. Older files could not have one, so "" for them."""
    _ddl(db, "ALTER TABLE experiments ADD COLUMN series TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX experiments_by_series ON experiments (series)")


def _v7(db: Connection) -> None:
    """The views again, with the experiments' `series` key (a dashboard groups by it as
    `volbench history --series` does)."""
    for view in ("case_summary", "run_metrics", "experiment_list"):
        db.execute(f"DROP VIEW {view}")
    _views(db, series=True)


def _ddl(db: Connection, statement: str) -> None:
    if isinstance(db, PgConnection):
        db.execute_ddl(statement)
    else:
        db.execute(statement)


def _version(db: Connection) -> int:
    if isinstance(db, PgConnection):
        row = db.execute("SELECT version FROM schema_version").fetchone()
        return int(row[0])
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def _set_version(db: Connection, number: int) -> None:
    if isinstance(db, PgConnection):
        db.execute("UPDATE schema_version SET version = ?", (number,))
    else:
        db.execute(f"PRAGMA user_version = {number}")


Migration = str | Callable[[Connection], None]
MIGRATIONS: list[Migration] = [V1, _v2, V3, _v4, _v5, _v6, _v7]
VERSION = len(MIGRATIONS)


def migrate(db: Connection, where: object) -> None:
    """Bring the database at `where` (a path or a redacted URL) to VERSION, one
    transaction per migration; a newer schema is refused, never misread."""
    if isinstance(db, PgConnection):
        # Read first: a current store takes no DDL and no lock, so a role with only
        # USAGE on the schema and SELECT on its tables (a dashboard's) can open it.
        found = stored_version(db)
        if found == VERSION:
            return
        if found is None and not db.writer:  # the schema, but no tables yet: nothing to read
            raise StoreError(no_store(db.location))
        if found is not None and found < VERSION and not db.writer and db.role != db.owner:
            # Grants would not help: only the schema's owner may upgrade its tables.
            raise StoreError(f"{where} has schema {found}, older than this volbench's "
                             f"({VERSION}); its owner ({db.owner or 'the owner of the schema'}) "
                             "must upgrade it: run `volbench cleanup --db URL` once as that "
                             "role (it upgrades the schema; it releases only claims its own "
                             "host's dead runs left), then read it again")
        # SQLite's PRAGMA user_version, as a one-row table made under the write lock.
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            if db.execute("SELECT 1 FROM schema_version").fetchone() is None:
                db.execute("INSERT INTO schema_version (version) VALUES (0)")
    try:
        version = _version(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{where} is not a volbench database: {exc}") from exc
    if version > VERSION:
        raise StoreError(f"{where} has schema {version}, newer than this volbench "
                         f"({VERSION}); upgrade volbench to read it")
    for number in range(version, VERSION):
        step = MIGRATIONS[number]
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another volbench may have migrated it while this one waited for the lock
            # (two runs starting on one new database at once).
            if _version(db) > number:
                db.commit()
                continue
            if isinstance(step, str):
                for statement in step.split(";"):
                    if statement.strip():
                        _ddl(db, statement)
            else:
                step(db)
            _set_version(db, number + 1)
            db.commit()
        except BaseException:
            db.rollback()
            raise
