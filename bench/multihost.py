"""Aggregate IOPS from 1, 2 and 3 load hosts (network namespaces, fio client/server).

Three designs, run one after another (so at most 3 loop devices exist at once):

- shared:      one disk capped at read_iops 1500, loaded by 1, 2, 3 hosts at once.
               Expected: the total stays at the cap (1500), split between the hosts.
- separate:    one disk per host, each capped at 1500. Expected: 1500 × hosts.
- unthrottled: one uncapped disk per host. Expected: grows until the 2 CPUs run out.

The hosts' fio servers join the cgroup of the disk they load, which is what makes the
cap apply to them. The plain disk targets also run the workload locally (one fio,
no client/server): the "local" rows.

    sudo .venv/bin/python bench/multihost.py [--runtime 5] [--repeat 3]
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

CAP = 1500
NAMES = ("a", "b", "c")


def targets(design: str) -> list[dict[str, Any]]:
    disk: dict[str, Any] = {"type": "loopdisk", "size": "512M"}
    if design != "unthrottled":
        disk["limits"] = {"read_iops": CAP}
    if design == "shared":
        found = [{"name": "disk", **disk}]
        found += [
            {"name": f"{n}-hosts", "type": "hosts", "hosts": list(NAMES[:n]), "on": ["disk"]}
            for n in (1, 2, 3)
        ]
        return found
    found = [{"name": f"disk{i}", **disk} for i in (1, 2, 3)]
    found += [
        {
            "name": f"{n}-hosts",
            "type": "hosts",
            "hosts": list(NAMES[:n]),
            "on": [f"disk{i}" for i in range(1, n + 1)],
        }
        for n in (1, 2, 3)
    ]
    return found


def iops(db: Path) -> dict[str, dict[str, list[float]]]:
    """Read IOPS of OK runs: target -> host tag ('' for a local run) -> values."""
    out: dict[str, dict[str, list[float]]] = {}
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT r.target, m.value, m.tags FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE m.name = 'iops' AND r.status = 'ok' AND r.warmup = 0 ORDER BY r.id"
        )
        for target, value, tags in rows:
            t = json.loads(tags)
            if t.get("op") == "read":
                out.setdefault(target, {}).setdefault(t.get("host", ""), []).append(value)
    return out


def failures(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [
            f"{t}: {e}"
            for t, e in con.execute("SELECT target, error FROM runs WHERE status != 'ok'")
        ]


def rows(design: str, found: dict[str, dict[str, list[float]]]) -> list[str]:
    expected = {
        "shared": lambda n: f"{CAP}",
        "separate": lambda n: f"{CAP * n}",
        "unthrottled": lambda n: "CPU-bound",
    }[design]
    lines = []
    local = [v for t, by in found.items() if t.startswith("disk") for v in by.get("", [])]
    if local:
        lines.append(
            f"| {design} | local fio (no client/server), per disk | "
            f"{statistics.median(local):,.0f} | – | {expected(1)} |"
        )
    for n in (1, 2, 3):
        by = found.get(f"{n}-hosts", {})
        total = by.get("all", [])
        if not total:
            lines.append(f"| {design} | {n} | no OK runs | – | {expected(n)} |")
            continue
        per = [statistics.median(by[h]) for h in NAMES[:n] if h in by]
        lines.append(
            f"| {design} | {n} | {statistics.median(total):,.0f} "
            f"({min(total):,.0f}–{max(total):,.0f}) | "
            f"{' / '.join(f'{v:,.0f}' for v in per)} | {expected(n)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    table = [
        "| design | load hosts | aggregate read IOPS, median (min–max) | "
        "per host (median) | expected |",
        "|---|---|---|---|---|",
    ]
    walls = []
    with hostlab.namespaces(3) as lab:
        hosts = [
            {"name": n, "netns": h.netns, "address": h.address}
            for n, h in zip(NAMES, lab, strict=True)
        ]
        for design in ("shared", "separate", "unthrottled"):
            exp = write_experiment(
                work / f"{design}.yaml",
                {
                    "name": f"multihost-{design}",
                    "workdir": str(work),
                    "hosts": hosts,
                    "targets": targets(design),
                    "workloads": [
                        {
                            "name": "rand4k",
                            "tool": "fio",
                            "rw": "randread",
                            "bs": "4k",
                            "iodepth": 16,
                            "size": "64M",
                            "runtime": args.runtime,
                        }
                    ],
                    "repeat": args.repeat,
                },
            )
            db = work / f"{design}.db"
            walls.append(volbench("run", str(exp), "--db", str(db), "--quiet"))
            table += rows(design, iops(db))
            for problem in failures(db):
                print(f"failed run: {problem}")
    print("\n".join(table))
    print(
        f"\nfio randread 4k, iodepth 16 per host, {args.runtime} s runs, {args.repeat} "
        f"repetitions interleaved; wall {sum(walls):.0f} s; results in {work}"
    )


if __name__ == "__main__":
    main()
