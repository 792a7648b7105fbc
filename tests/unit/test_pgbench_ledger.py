"""The commit ledger across a cut, on pgbench 15's real output (server killed mid-run:
tests/data/pgbench/capture_cut.py)."""

from __future__ import annotations

from pathlib import Path

from volbench.workloads import pgbench_ledger as ledger
from volbench.workloads.pgbench_parse import parse_run

DATA = Path(__file__).resolve().parents[1] / "data" / "pgbench" / "15.18"


def _read(name: str) -> str:
    return (DATA / f"cut-ledger.{name}").read_text()


def test_script_adds_the_counter_and_the_row_inside_the_transaction() -> None:
    text = ledger.script("tpcb-like")
    lines = text.splitlines()
    assert lines.index("\\set vbn :vbn + 1") < lines.index("BEGIN;")
    row = next(i for i, ln in enumerate(lines) if ln.startswith("INSERT INTO volbench_commits"))
    assert lines.index("BEGIN;") < row < lines.index("END;")
    assert ":client_id" in lines[row] and ":vbcycle" in lines[row]
    assert ledger.defines(7) == ["-D", "vbn=0", "-D", "vbcycle=7"]


def test_every_acknowledged_commit_of_the_captured_cut_came_back() -> None:
    cut = float(_read("cut"))
    logs = [_read("txlog")]
    acknowledged = ledger.acked(logs, cut)
    found = ledger.rows(_read("rows"))
    result = ledger.compare(acknowledged, found)
    # pgbench: "actually processed: 940"; the kill took a few milliseconds after the
    # cut's moment was taken, and the commits that returned in them are not counted
    # (nor lost: durable, their answer came after the cut).
    late = sum(1 for _, _, done in ledger.committed(logs) if done > cut)
    assert len(found) == 940 and 0 < late < 20
    assert (result.acked, result.lost, result.present) == (940 - late, 0, 940 - late)
    assert result.durable_unacked == late
    # The transaction numbers are the client's own counter, n, 1 up.
    for client, numbers in acknowledged.items():
        assert numbers == set(range(1, len(numbers) + 1))
        assert numbers <= {n for c, n in found if c == client}


def test_missing_rows_are_lost_commits_and_say_how_far_back() -> None:
    cut = float(_read("cut"))
    logs = [_read("txlog")]
    found = ledger.rows(_read("rows"))
    acknowledged = ledger.acked(logs, cut)
    gone = {(c, max(numbers) - i) for c, numbers in acknowledged.items() for i in range(3)}
    kept = found - gone  # each client's three last acknowledged commits
    result = ledger.compare(acknowledged, kept)
    assert result.lost == len(gone) == 6
    since = ledger.lost_since(logs, kept, cut)
    assert since is not None and 0 < since < 3.0


def test_acknowledgements_after_the_cut_are_not_counted() -> None:
    logs = [_read("txlog")]
    commits = list(ledger.committed(logs))
    middle = sorted(done for _, _, done in commits)[len(commits) // 2]
    assert sum(len(v) for v in ledger.acked(logs, middle).values()) == len(commits) // 2 + 1


def test_failed_and_short_lines_are_not_commits() -> None:
    text = "0 1 5000 0 1700000000 100\n0 2 failed 0 1700000001 100\n1 1 4000\n"
    assert list(ledger.committed([text])) == [(0, 1, 1700000000.0001)]


def test_an_aborted_run_still_has_its_summary() -> None:
    metrics = {m.name: m.value for m in parse_run(_read("stdout"), "pgbench").metrics}
    assert metrics["transactions"] == 940
