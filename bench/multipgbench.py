"""pgbench tps from 1, 2 and 3 client hosts against one server, throttled and not.

Two loop-disk targets, each with its own throwaway PostgreSQL cluster per set of client
hosts (the postmaster in the target's cgroup):

- standard: capped at 500 IOPS and 50 MiB/s per direction (the lab's "standard" class);
- fast:     no cap.

Workloads: TPC-B-like, `clients` per host, from 1, 2 and 3 network-namespace hosts
(`clients_from:`, over TCP), plus one local pgbench over the unix socket (no
clients_from) with the clients of one host and with those of three, as references.
Interleaved repetitions.

    sudo .venv/bin/python bench/multipgbench.py [--duration 10] [--repeat 3] [--clients 4]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import volbench, write_experiment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import hostlab  # the test hosts live with the tests

NAMES = ("a", "b", "c")
STANDARD = {"read_iops": 500, "write_iops": 500, "read_bps": "50M", "write_bps": "50M"}


def workloads(clients: int, duration: int, scale: int) -> list[dict[str, Any]]:
    common = {
        "tool": "pgbench",
        "scale": scale,
        "clients": clients,
        "duration": f"{duration}s",
        "settings": {"shared_buffers": "32MB"},
    }
    found: list[dict[str, Any]] = [
        {"name": "local", **common},
        {"name": "local-x3", **common, "clients": 3 * clients},  # as many as 3 hosts
    ]
    found += [{"name": f"{n}-hosts", **common, "clients_from": list(NAMES[:n])} for n in (1, 2, 3)]
    return found


def results(db: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    """tps of OK runs: (target, workload) -> host tag ('' for local) -> values. Prints any
    run whose server-side transaction count differs from the hosts' sum."""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT r.id, r.target, r.workload, m.name, m.value, m.tags FROM metrics m "
            "JOIN runs r ON r.id = m.run_id WHERE r.status = 'ok' AND r.warmup = 0 "
            "AND m.name IN ('tps', 'transactions', 'server_transactions') ORDER BY r.id"
        )
        per_run: dict[int, dict[str, float]] = {}
        for run_id, target, workload, name, value, tags in rows:
            host = json.loads(tags).get("host", "")
            if name == "tps":
                out.setdefault((target, workload), {}).setdefault(host, []).append(value)
            elif host in ("all", ""):
                per_run.setdefault(run_id, {})[name] = value
        for counts in per_run.values():
            server, hosts = counts.get("server_transactions"), counts.get("transactions")
            if server is not None and server != hosts:
                print(f"mismatch: the server counted {server:.0f}, the hosts {hosts}")
    return out


def failures(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [
            f"{t}/{w}: {e}"
            for t, w, e in con.execute(
                "SELECT target, workload, error FROM runs WHERE status != 'ok'"
            )
        ]


def rows(found: dict[tuple[str, str], dict[str, list[float]]], clients: int) -> list[str]:
    lines = []
    for target in ("standard", "fast"):
        for name, n in (("local", clients), ("local-x3", 3 * clients)):
            local = found.get((target, name), {}).get("", [])
            if local:
                lines.append(
                    f"| {target} | none: local pgbench, unix socket | {n} | "
                    f"{statistics.median(local):,.0f} ({min(local):,.0f}–{max(local):,.0f})"
                    " | – |"
                )
        for n in (1, 2, 3):
            by = found.get((target, f"{n}-hosts"), {})
            total = by.get("all", [])
            if not total:
                lines.append(f"| {target} | {n} | {clients * n} | no OK runs | – |")
                continue
            per = [statistics.median(by[h]) for h in NAMES[:n] if h in by]
            lines.append(
                f"| {target} | {n} | {clients * n} | {statistics.median(total):,.0f} "
                f"({min(total):,.0f}–{max(total):,.0f}) | {' / '.join(f'{v:,.0f}' for v in per)} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4, help="pgbench clients per host")
    parser.add_argument("--scale", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    work.chmod(0o755)  # the postgres user must reach the cluster's directories
    with hostlab.namespaces(3) as lab:
        hosts = [
            {"name": n, "netns": h.netns, "address": h.address}
            for n, h in zip(NAMES, lab, strict=True)
        ]
        exp = write_experiment(
            work / "multipgbench.yaml",
            {
                "name": "multipgbench",
                "workdir": str(work),
                "hosts": hosts,
                "targets": [
                    {"name": "standard", "type": "loopdisk", "size": "1G", "limits": STANDARD},
                    {"name": "fast", "type": "loopdisk", "size": "1G"},
                ],
                "workloads": workloads(args.clients, args.duration, args.scale),
                "repeat": args.repeat,
            },
        )
        db = work / "multipgbench.db"
        wall = volbench("run", str(exp), "--db", str(db), "--quiet", timeout=7200)
    table = [
        "| target | client hosts | clients in all | tps, all hosts: median (min–max) | "
        "per host (median) |",
        "|---|---|---|---|---|",
    ]
    table += rows(results(db), args.clients)
    for problem in failures(db):
        print(f"failed run: {problem}")
    print("\n".join(table))
    print(
        f"\nTPC-B-like, scale {args.scale}, {args.clients} clients per host, "
        f"{args.duration} s runs, {args.repeat} repetitions interleaved, shared_buffers "
        f"32MB; wall {wall:.0f} s; results in {work}"
    )


if __name__ == "__main__":
    main()
