"""Storage under failure in the lab: RAID1 vs RAID10 vs RAID0 degraded and rebuilding,
NFSv3 vs NFSv4.2 server restart, iSCSI path loss shorter and longer than the initiator's
replacement_timeout. One boot, one `volbench lab run` (CLI end to end).

- md: each array's member failed at 10 s and added back at 25 s (md's rebuild limits set
  to 20 MB/s), fio 4k random reads QD16, 45 s, on 300M standard disks (500 IOPS each).
  RAID0 cannot lose a member: the fail is refused by md and the run says so.
- NFS: nfsd stopped at 10 s for 15 s under 4k random writes QD4, 45 s; hard mounts.
  NFSv4 clients wait out the server's grace period (10 s, as volbench starts nfsd) after
  the restart; NFSv3 has none.
- iSCSI: two LIO LUNs on 300M standard disks, the initiator logged in with an 8 s
  replacement_timeout, the path cut at 10 s under the same writes: for 4 s on one (the
  writes wait, no error), for 16 s on the other (the initiator fails the queued writes
  after 8 s: EIO/ENOLINK counted with continue_on_error, until its login after `restore`).

Prints per target the phase levels, the longest stall, the recovery, the rebuild and the
I/O errors, and a Markdown table for docs/faults.md. `--parts` picks the parts (one boot
either way; the reads workload runs only with md).

    .venv/bin/python bench/faults.py [--runtime 45] [--parts md,nfs,iscsi] [--keep DIR]
        [--timeline TARGET OUT.svg]

`--timeline` also writes the HTML report's IOPS time-series chart of TARGET's faulted run
(its phases shaded and labelled), as docs/img/faults-iscsi-cut.svg was made.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from volbench import report
from volbench.report.charts import all_charts
from volbench.store.db import Store

D = "/dev/disk/by-id/virtio-{}".format
MD = {"raid1": ("a1", "a2"), "raid10": ("b1", "b2", "b3", "b4"), "raid0": ("c1", "c2")}
PARTS = ("md", "nfs", "iscsi")
REPLACEMENT_TIMEOUT_S = 8
CUTS = {"cut4s": ("e1", 4), "cut16s": ("e2", 16)}  # target: its disk, the cut's seconds


def experiment(runtime: int, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    disks: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    md_faults: list[dict[str, Any]] = []
    write_faults: list[dict[str, Any]] = []
    if "md" in parts:
        disks += [{"name": n, "size": "300M", "class": "standard"}
                  for ds in MD.values() for n in ds]
        targets += [{"name": level, "type": "mdraid", "level": level, "fs": "none",
                     "devices": [D(n) for n in names]} for level, names in MD.items()]
        for names in MD.values():
            md_faults += [{"at": "10s", "action": "fail", "device": D(names[-1]),
                           "speed_limit_min": 20000, "speed_limit_max": 20000},
                          {"at": "25s", "action": "restore", "device": D(names[-1])}]
    if "nfs" in parts:
        disks += [{"name": "n1", "size": "1G", "class": "fast"},
                  {"name": "n2", "size": "1G", "class": "fast"}]
        targets += [{"name": "nfs3", "type": "nfs", "version": 3, "device": D("n1"),
                     "mount_options": ["hard", "nolock"]},
                    {"name": "nfs42", "type": "nfs", "version": 4.2, "device": D("n2"),
                     "mount_options": ["hard"]}]
        write_faults += [{"at": "10s", "action": "stop", "target": t, "for": "15s"}
                         for t in ("nfs3", "nfs42")]
    if "iscsi" in parts:
        disks += [{"name": disk, "size": "300M", "class": "standard"}
                  for disk, _ in CUTS.values()]
        targets += [{"name": name, "type": "iscsi", "device": D(disk), "fs": "none",
                     "replacement_timeout": f"{REPLACEMENT_TIMEOUT_S}s"}
                    for name, (disk, _) in CUTS.items()]
        write_faults += [{"at": "10s", "action": "cut", "target": name, "for": f"{cut}s"}
                         for name, (_, cut) in CUTS.items()]
    fio = {"tool": "fio", "bs": "4k", "runtime": f"{runtime}s"}
    workloads: list[dict[str, Any]] = []
    if md_faults:
        workloads.append({"name": "reads", "rw": "randread", "iodepth": 16, "size": "128M",
                          **fio, "faults": md_faults})
    if write_faults:
        # fio goes on past the write errors of a cut longer than the replacement_timeout:
        # EIO, and ENOLINK (67) for the writes the initiator held when its time ran out.
        workloads.append({"name": "writes", "rw": "randwrite", "iodepth": 4, "size": "64M",
                          **fio, "faults": write_faults,
                          "options": {"continue_on_error": "all",
                                      "ignore_error": "EIO,EIO:67"}})
    return {"name": "bench-faults", "lab": {"disks": disks}, "targets": targets,
            "workloads": workloads, "repeat": 1}


def table(db: Path) -> list[str]:
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = [r for r in store.runs([row.id]) if "faults" in r.annotations]
    lines = ["| target | workload | before | fault | restore/after | stall | recovery | "
             "rebuild | I/O errors | events |", "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        got = {(m.name, m.tags.get("phase", "")): m for m in run.metrics
               if m.tags.get("op") in (None, "read", "write")}

        def iops(phase: str, got: dict[tuple[str, str], Any] = got) -> str:
            m = got.get(("iops", phase))
            return f"{m.value:.0f}" if m is not None and m.value is not None else "-"

        fault = next((p for (n, p) in got if n == "iops" and p not in
                      ("", "before", "after", "restore")), "")
        later = "restore" if ("iops", "restore") in got else "after"
        stall = got.get(("stall_seconds", ""))
        rec = next((m for (n, _), m in got.items() if n == "recovery_seconds"), None)
        reb = got.get(("rebuild_seconds", ""))
        err = got.get(("io_errors", ""))
        errors = "-" if err is None or err.value is None else f"{err.value:.0f}" + (
            f" ({err.note.removeprefix('first error: ')})" if err.note else "")
        events = "; ".join(f"{e['action']} {e['done_s']:.1f}s" + (" REFUSED" if e["error"]
                           else "") for e in run.annotations["faults"]["events"])
        lines.append(
            f"| {run.target} | {run.workload} | {iops('before')} | {fault} {iops(fault)} | "
            f"{later} {iops(later)} | {stall.value if stall else '-'} s | "
            f"{'not recovered' if rec is None or rec.value is None else f'{rec.value:.1f} s'} | "
            f"{'-' if reb is None or reb.value is None else f'{reb.value:.0f} s'}"
            f"{' (projected)' if reb is not None and reb.note else ''} | {errors} | {events} |")
    return lines


def timeline(db: Path, target: str, out: Path) -> None:
    """The report's per-second IOPS chart of the runs of `target` alone, as an SVG file."""
    options = report.ReportOptions()
    with Store(db, create=False) as store:
        (row,) = store.experiments()[-1:]
        runs = [r for r in store.runs([row.id], series=True) if r.target == target]
        targets = [t for t in store.targets(row.id) if t.name == target]
        rep = report.build([row], targets, runs, options)
    chart = next(c for c in all_charts(rep, options)
                 if c.slug.endswith("series") and "-iops" in c.slug)
    out.write_text(chart.svg)
    print(f"wrote {out} ({chart.width}x{chart.height})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=45)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated, of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--keep", type=Path, help="keep the database and report here")
    parser.add_argument("--timeline", nargs=2, metavar=("TARGET", "SVG"),
                        help="write the IOPS time-series chart of TARGET's run to SVG")
    parser.add_argument("--db", type=Path, help="report this database, run nothing")
    args = parser.parse_args()
    if args.db is not None:
        print("\n".join(table(args.db)))
        if args.timeline:
            timeline(args.db, args.timeline[0], Path(args.timeline[1]))
        return
    parts = tuple(p for p in args.parts.split(",") if p)
    if not parts or set(parts) - set(PARTS):
        parser.error(f"--parts: give some of {', '.join(PARTS)}, comma-separated")
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-faults-"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "exp.yaml").write_text(yaml.safe_dump(experiment(args.runtime, parts), sort_keys=False))
    db = out / "results.db"
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "volbench.cli.main", "lab", "run",
                           str(out / "exp.yaml"), "--db", str(db), "--quiet"], check=False)
    if not db.exists():
        sys.exit(f"volbench lab run failed (exit {done.returncode})")
    # Exit 3: some runs failed, e.g. RAID0's next run after its member was failed.
    print(f"one boot, {time.monotonic() - t0:.0f} s, exit {done.returncode}; database {db}")
    print("\n".join(table(db)))
    if args.timeline:
        timeline(db, args.timeline[0], Path(args.timeline[1]))


if __name__ == "__main__":
    main()
