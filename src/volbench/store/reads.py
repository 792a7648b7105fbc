"""Reading a store: experiments, runs with their metrics, series, histograms and raw
outputs, the report's JSON and metric rows, in as few queries as the report needs.

`Reads` is the read half of db.Store (the same connection, SQLite or PostgreSQL through
pg.py); a damaged JSON column leaves its row out with a line in `damaged`, never a crash.
"""

from __future__ import annotations

import gc
import json
import zlib
from collections.abc import Collection, Iterable, Iterator
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
)
from volbench.store import pg, schema
from volbench.store.location import Location


class Reads:
    """The queries of a Store (db.py) that only read."""

    db: schema.Connection
    path: Location
    damaged: list[str]

    def find_resumable(self, spec_hash: str) -> ExperimentRow | None:
        """The latest experiment with this exact spec (for --resume)."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE spec_hash = ? ORDER BY id DESC LIMIT 1",
            (spec_hash,)).fetchone()
        return _experiment(row, self.damaged, self.path) if row else None

    def fingerprints(self, experiment_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Run id -> its fingerprint (runs stored without one are left out)."""
        ids = list(experiment_ids)
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT r.id, f.document FROM runs r JOIN fingerprints f ON f.digest ="
            f" r.fingerprint WHERE r.experiment_id IN ({marks})", ids).fetchall()
        return {int(r[0]): json.loads(r[1]) for r in rows}

    def experiments(self) -> list[ExperimentRow]:
        """Every experiment, oldest (lowest id) first; damaged JSON reads as {}."""
        return [_experiment(r, self.damaged, self.path)
                for r in self.db.execute("SELECT * FROM experiments ORDER BY id")]

    def experiment(self, experiment_id: int) -> ExperimentRow:
        """The experiment of that id, or a StoreError saying how to list them."""
        row = self.db.execute("SELECT * FROM experiments WHERE id = ?",
                              (experiment_id,)).fetchone()
        if row is None:
            raise StoreError(f"no experiment {experiment_id} in {self.path}; "
                             "`volbench report --list` shows what is there")
        return _experiment(row, self.damaged, self.path)

    def targets(self, experiment_id: int) -> list[TargetRow]:
        """The experiment's targets in the order they were saved."""
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
        """How many runs (any status, warm-ups too) the experiment has."""
        return int(self.db.execute("SELECT COUNT(*) FROM runs WHERE experiment_id = ?",
                                   (experiment_id,)).fetchone()[0])

    def runs(self, experiment_ids: Iterable[int], *, outputs: bool = False,
             series: bool = False, histograms: bool = False,
             metric_names: Collection[str] | None = None, kept: bool = False
             ) -> list[RunResult]:
        """Runs with their metrics (all, or only `metric_names`) and optionally raw
        outputs, series and per-run histograms.

        `kept`: the caller holds these runs until its short process ends (a report), so
        everything alive is frozen out of the cyclic collector's sight (gc.freeze):
        its full passes would walk 100 000 runs' objects again and again. Not for a
        long-lived caller (the runner's rounds): cyclic garbage alive at that moment
        would never be collected."""
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
            if kept:
                # The collector's first full pass after the pause alone took 2 s on
                # 100 000 runs. Runs form no cycles: reference counting still frees them.
                gc.freeze()
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
        # fetchall: psycopg's row-by-row iteration cost 1.6 s for 500 000 metric rows.
        for run_id, name, value, unit, tags, note in self.db.execute(query, args).fetchall():
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
