"""Seed 001 reproduced in the lab, timed: plain disk vs LVM span over 2 and 3 disks vs LVM
striped x2, fio random 4k reads on a small and a large working set.

Runs `volbench lab run examples/seed001-lvm-span-vs-stripe.yaml` (one VM boot), then prints
the wall time, the median IOPS per layout and working-set size, each as a multiple of the
plain disk, the plain disk's IOPS against its class cap (500, target within ±3 %), and the
seed's finding checked: striped ahead at the small size, the spans only catching up once
the working set covers every disk.

    .venv/bin/python bench/seed001.py [--db /var/tmp/volbench-bench-seed001/seed001.db]
    (also writes the report and the charts: --charts DIR)
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from pathlib import Path

from common import volbench
from volbench.core import units

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "seed001-lvm-span-vs-stripe.yaml"
CAP = 500.0  # the "standard" lab disk class
LAYOUTS = ("plain", "span2", "span3", "striped2")


def iops_by_layout_and_size(db: Path) -> dict[tuple[str, str], list[float]]:
    """Read IOPS of every OK, measured run, by (target, fio size)."""
    found: dict[tuple[str, str], list[float]] = {}
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT r.target, r.params, m.value, m.tags FROM metrics m"
            " JOIN runs r ON r.id = m.run_id"
            " WHERE m.name = 'iops' AND r.status = 'ok' AND r.warmup = 0 ORDER BY r.id"
        )
        for target, params, value, tags in rows:
            if json.loads(tags).get("op") == "read" and value is not None:
                size = str(json.loads(params)["size"])
                found.setdefault((target, size), []).append(float(value))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--db", type=Path, default=Path("/var/tmp/volbench-bench-seed001/seed001.db")
    )
    parser.add_argument(
        "--charts",
        type=Path,
        default=None,
        help="also export the report's charts (PNG) to this folder",
    )
    parser.add_argument(
        "--analyse-only", action="store_true", help="read an existing --db; run nothing"
    )
    args = parser.parse_args()
    started = time.monotonic()
    if not args.analyse_only:
        args.db.parent.mkdir(parents=True, exist_ok=True)
        args.db.unlink(missing_ok=True)
        seconds = volbench(
            "lab", "run", str(EXAMPLE), "--db", str(args.db), "--quiet", timeout=4 * 3600
        )
        print(
            f"volbench lab run {EXAMPLE.name}: {seconds / 60:.1f} min wall time "
            f"(boot, build, layout, {len(LAYOUTS)} layouts x 2 sizes x 3 runs, teardown)"
        )
    values = iops_by_layout_and_size(args.db)
    sizes = sorted({size for _, size in values}, key=units.parse_size)
    medians = {key: statistics.median(v) for key, v in values.items()}
    print(f"\n| layout | {' | '.join(f'{s} IOPS (x plain)' for s in sizes)} |")
    print("|---|" + "---|" * len(sizes))
    for layout in LAYOUTS:
        cells = []
        for size in sizes:
            runs = values.get((layout, size), [])
            if not runs:
                cells.append("failed")
                continue
            ratio = medians[(layout, size)] / medians[("plain", size)]
            cells.append(
                f"{medians[(layout, size)]:.0f} ({ratio:.2f}x; "
                f"{', '.join(f'{v:.0f}' for v in runs)})"
            )
        print(f"| {layout} | {' | '.join(cells)} |")
    plain = [v for size in sizes for v in values.get(("plain", size), [])]
    worst = max(abs(v / CAP - 1) for v in plain)
    print(
        f"\nplain disk (cap {CAP:.0f} IOPS): {', '.join(f'{v:.1f}' for v in plain)}; "
        f"worst {worst * 100:.1f} % off the cap (target ±3 %): "
        f"{'ok' if worst <= 0.03 else 'OUTSIDE'}"
    )
    small, large = sizes[0], sizes[-1]

    def ratio(layout: str, size: str) -> float:
        return medians[(layout, size)] / medians[("plain", size)]

    finding = (
        ratio("striped2", small) > 1.7
        and ratio("span2", small) < 1.2
        and ratio("span3", small) < 1.2
        and ratio("span2", large) > 1.5
        and ratio("span3", large) > ratio("span2", large)
    )
    print(
        f"seed 001's finding (striped ahead at {small}; spans catch up at {large}, "
        f"span3 > span2): {'reproduced' if finding else 'NOT reproduced'}"
    )
    if args.charts is not None:
        volbench("report", "--db", str(args.db), "--charts", str(args.charts), "--png")
        print(f"charts in {args.charts}")
    print(f"total {time.monotonic() - started:.0f} s; database {args.db}")


if __name__ == "__main__":
    main()
