"""push and pull: copy experiments with their runs from one store to another.

Experiments and runs are matched by UUID, never by id or name (two hosts' experiment 1
are different experiments), so copying twice adds nothing and a copy that was
interrupted continues where it stopped. Each experiment is copied in one transaction
of the destination: another reader sees all of its new runs or none of them, and a
copy killed at any moment leaves nothing half-visible (the server, or SQLite's journal,
rolls the open transaction back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from volbench.core.bulk import paused_gc
from volbench.store import bulkinsert
from volbench.store.db import Store

EXPERIMENT_COLUMNS = ("name, spec_hash, document, environment, seed, created, finished, status,"
                      " uuid, host, series")


@dataclass
class Copied:
    """What a copy added (experiments new to the destination, runs new to it)."""

    experiments: int = 0
    runs: int = 0
    skipped: list[str] = field(default_factory=list)


def copy(source: Store, destination: Store, experiment_ids: Sequence[int] | None = None,
         on_experiment: Callable[[str, int], None] | None = None) -> Copied:
    """Copy `experiment_ids` (default all) from `source` to `destination`.

    Guarantees: every run ends up in the destination exactly once (by UUID); each
    experiment's copy is one transaction; the source is only read."""
    copied = Copied()
    ids = list(experiment_ids) if experiment_ids is not None else [
        e.id for e in source.experiments()]
    for exp_id in ids:
        added, new = _copy_experiment(source, destination, exp_id)
        copied.runs += added
        copied.experiments += int(new)
        if on_experiment is not None:
            on_experiment(source.experiment(exp_id).name, added)
    return copied


def _copy_experiment(source: Store, destination: Store, exp_id: int) -> tuple[int, bool]:
    """(runs added, experiment new?) for one experiment, in one destination transaction."""
    row = source.db.execute(f"SELECT {EXPERIMENT_COLUMNS} FROM experiments WHERE id = ?",
                            (exp_id,)).fetchone()
    uuid = row[8]
    wanted = {r[0]: (r[1], r[2]) for r in source.db.execute(
        "SELECT id, uuid, fingerprint FROM runs WHERE experiment_id = ?", (exp_id,))}
    fingerprints = _fingerprints(source, {fp for _, fp in wanted.values() if fp})
    targets = source.db.execute("SELECT name, type, status, error, info, built FROM targets"
                                " WHERE experiment_id = ? ORDER BY rowid", (exp_id,)).fetchall()
    db = destination.db
    with paused_gc(), db:
        # The write lock for the look-up and the inserts: two pushes of one file at
        # once are serialised, and the second finds everything there.
        db.execute("BEGIN IMMEDIATE")
        found = db.execute("SELECT id FROM experiments WHERE uuid = ?", (uuid,)).fetchone()
        if found is None:
            marks = ", ".join("?" * len(EXPERIMENT_COLUMNS.split(",")))
            cur = db.execute(f"INSERT INTO experiments ({EXPERIMENT_COLUMNS}) VALUES ({marks})",
                             tuple(row))
            assert cur.lastrowid is not None
            target_id = cur.lastrowid
        else:
            target_id = int(found[0])
            db.execute("UPDATE experiments SET finished = ?, status = ? WHERE id = ?",
                       (row[6], row[7], target_id))
        have = {r[0] for r in db.execute("SELECT uuid FROM runs WHERE experiment_id = ?",
                                          (target_id,))}
        missing = {rid for rid, (ruuid, _) in wanted.items() if ruuid not in have}
        db.executemany("INSERT OR REPLACE INTO targets (experiment_id, name, type, status,"
                       " error, info, built) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [(target_id, *t) for t in targets])
        db.executemany("INSERT OR IGNORE INTO fingerprints (digest, document) VALUES (?, ?)",
                       fingerprints.items())
        bulkinsert.copy_runs(source.db, db, exp_id, target_id, sorted(missing),
                             whole=found is None)
    return len(missing), found is None


def _fingerprints(source: Store, digests: set[str]) -> dict[str, str]:
    if not digests:
        return {}
    marks = ",".join("?" * len(digests))
    return {r[0]: r[1] for r in source.db.execute(
        f"SELECT digest, document FROM fingerprints WHERE digest IN ({marks})",
        sorted(digests))}

