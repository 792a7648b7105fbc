"""Counting commits across a power cut: which committed transactions came back.

Under a power cut pgbench runs volbench's variant of its built-in script: the same
transaction plus one row, `(cycle, client, n)`, inserted in it, where `n` is the
client's own counter (`\\set vbn :vbn + 1`, started by `-D vbn=0`; pgbench keeps a
client's variables from one transaction to the next). pgbench's per-transaction log
(`-l`: `client_id transaction_no time script_no time_epoch time_us ...`) is the client's
record of what returned: its transaction_no counts the client's transactions from 1,
as `n` does (checked on PostgreSQL 15: 771 committed, 771 rows, numbers equal).

After the recovery the committed transactions acknowledged before the cut (the log's
completion times) must all have their row: `commits_lost` counts those that do not. A
row with no acknowledgement (the commit was durable, the answer never came) is no loss.

Pure functions: the script text, the log and the query's output in, counts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

TABLE = "volbench_commits"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (cycle bigint, client int, n bigint)"
COUNTER, CYCLE = "vbn", "vbcycle"
# pgbench's built-in scripts that write (identical from PostgreSQL 12 to 18).
_HEAD = (
    "\\set aid random(1, 100000 * :scale)\n"
    "\\set bid random(1, 1 * :scale)\n"
    "\\set tid random(1, 10 * :scale)\n"
    "\\set delta random(-5000, 5000)\n"
)
_TAIL = (
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) "
    "VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n"
)
BUILTIN = {
    "tpcb-like": _HEAD + "BEGIN;\n"
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n"
    "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n"
    + _TAIL + "END;\n",
    "simple-update": _HEAD + "BEGIN;\n"
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    + _TAIL + "END;\n",
}
FAILED_WORDS = ("failed", "serialization", "deadlock", "skipped")


def script(builtin: str) -> str:
    """The built-in `builtin` with the ledger's counter and row (KeyError: not a built-in
    that writes)."""
    text = BUILTIN[builtin]
    text = text.replace("BEGIN;\n", f"\\set {COUNTER} :{COUNTER} + 1\nBEGIN;\n", 1)
    row = f"INSERT INTO {TABLE} (cycle, client, n) VALUES (:{CYCLE}, :client_id, :{COUNTER});\n"
    return text.replace("END;\n", row + "END;\n")


def defines(cycle: int) -> list[str]:
    """pgbench arguments that start the ledger's variables."""
    return ["-D", f"{COUNTER}=0", "-D", f"{CYCLE}={cycle}"]


def query(cycle: int) -> str:
    """The rows of one cycle, as `client|n` lines from psql -At."""
    return f"SELECT client, n FROM {TABLE} WHERE cycle = {cycle}"


def committed(logs: Iterable[str]) -> Iterator[tuple[int, int, float]]:
    """(client, transaction number, completion time) of each committed transaction in
    pgbench's -l logs (failed and skipped ones are not; a line cut short is dropped)."""
    for text in logs:
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 6 or parts[2] in FAILED_WORDS:
                continue
            try:
                yield int(parts[0]), int(parts[1]), int(parts[4]) + int(parts[5]) / 1e6
            except ValueError:
                continue


def acked(logs: Iterable[str], cut_at: float) -> dict[int, set[int]]:
    """Per client, the transaction numbers that returned committed before `cut_at`."""
    found: dict[int, set[int]] = {}
    for client, number, done in committed(logs):
        if done <= cut_at:
            found.setdefault(client, set()).add(number)
    return found


def rows(text: str) -> set[tuple[int, int]]:
    """(client, n) of each row `psql -At` printed as `client|n`."""
    out: set[tuple[int, int]] = set()
    for line in text.splitlines():
        if "|" in line:
            client, n = line.split("|", 1)
            out.add((int(client), int(n)))
    return out


@dataclass(frozen=True)
class Commits:
    """What came back of the acknowledged commits."""

    acked: int
    lost: int
    present: int
    durable_unacked: int
    # The oldest lost commit's acknowledgement, seconds before the cut.
    lost_since_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The counts as stored with the run."""
        return asdict(self)


def compare(acknowledged: dict[int, set[int]], found: set[tuple[int, int]]) -> Commits:
    """Acknowledged commits without their row are lost; rows nobody was told of are
    durable but unacknowledged (no loss)."""
    total = sum(len(v) for v in acknowledged.values())
    lost = sum(1 for c, numbers in acknowledged.items() for n in numbers if (c, n) not in found)
    extra = sum(1 for c, n in found if n not in acknowledged.get(c, set()))
    return Commits(total, lost, total - lost, extra)


def lost_since(logs: Iterable[str], found: set[tuple[int, int]], cut_at: float
               ) -> float | None:
    """How long before the cut the oldest lost acknowledged commit returned."""
    lost = [done for client, number, done in committed(logs)
            if done <= cut_at and (client, number) not in found]
    return round(cut_at - min(lost), 3) if lost else None
