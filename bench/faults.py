"""Storage under failure in the lab: RAID1 vs RAID10 vs RAID0 degraded and rebuilding,
NFSv3 vs NFSv4.2 server restart. One boot, one `volbench lab run` (CLI end to end).

- md: each array's member failed at 10 s and added back at 25 s (md's rebuild limits set
  to 20 MB/s), fio 4k random reads QD16, 45 s, on 300M standard disks (500 IOPS each).
  RAID0 cannot lose a member: the fail is refused by md and the run says so.
- NFS: nfsd stopped at 10 s for 15 s under 4k random writes QD4, 45 s; hard mounts.
  NFSv4 clients wait out the server's grace period (10 s, as volbench starts nfsd) after
  the restart; NFSv3 has none.

Prints per target the phase levels, the longest stall, the recovery and the rebuild, and
a Markdown table for docs/faults.md.

    .venv/bin/python bench/faults.py [--runtime 45] [--keep DIR]
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

from volbench.store.db import Store

D = "/dev/disk/by-id/virtio-{}".format
MD = {"raid1": ("a1", "a2"), "raid10": ("b1", "b2", "b3", "b4"), "raid0": ("c1", "c2")}


def experiment(runtime: int) -> dict[str, Any]:
    disks = [{"name": n, "size": "300M", "class": "standard"} for ds in MD.values() for n in ds]
    disks += [{"name": "n1", "size": "1G", "class": "fast"},
              {"name": "n2", "size": "1G", "class": "fast"}]
    targets: list[dict[str, Any]] = [
        {"name": level, "type": "mdraid", "level": level, "fs": "none",
         "devices": [D(n) for n in names]} for level, names in MD.items()]
    targets += [{"name": "nfs3", "type": "nfs", "version": 3, "device": D("n1"),
                 "mount_options": ["hard", "nolock"]},
                {"name": "nfs42", "type": "nfs", "version": 4.2, "device": D("n2"),
                 "mount_options": ["hard"]}]
    md_faults = []
    for names in MD.values():
        md_faults += [{"at": "10s", "action": "fail", "device": D(names[-1]),
                       "speed_limit_min": 20000, "speed_limit_max": 20000},
                      {"at": "25s", "action": "restore", "device": D(names[-1])}]
    fio = {"tool": "fio", "bs": "4k", "runtime": f"{runtime}s"}
    return {
        "name": "bench-faults",
        "lab": {"disks": disks},
        "targets": targets,
        "workloads": [
            {"name": "reads", "rw": "randread", "iodepth": 16, "size": "128M", **fio,
             "faults": md_faults},
            {"name": "writes", "rw": "randwrite", "iodepth": 4, "size": "64M", **fio,
             "faults": [{"at": "10s", "action": "stop", "target": t, "for": "15s"}
                        for t in ("nfs3", "nfs42")]},
        ],
        "repeat": 1,
    }


def table(db: Path) -> list[str]:
    with Store(db, create=False) as store:
        (row,) = store.experiments()
        runs = [r for r in store.runs([row.id]) if "faults" in r.annotations]
    lines = ["| target | workload | before | fault | restore/after | stall | recovery | "
             "rebuild | events |", "|---|---|---|---|---|---|---|---|---|"]
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
        events = "; ".join(f"{e['action']} {e['done_s']:.1f}s" + (" REFUSED" if e["error"]
                           else "") for e in run.annotations["faults"]["events"])
        lines.append(
            f"| {run.target} | {run.workload} | {iops('before')} | {fault} {iops(fault)} | "
            f"{later} {iops(later)} | {stall.value if stall else '-'} s | "
            f"{'not recovered' if rec is None or rec.value is None else f'{rec.value:.1f} s'} | "
            f"{'-' if reb is None or reb.value is None else f'{reb.value:.0f} s'}"
            f"{' (projected)' if reb is not None and reb.note else ''} | {events} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=45)
    parser.add_argument("--keep", type=Path, help="keep the database and report here")
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-faults-"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "exp.yaml").write_text(yaml.safe_dump(experiment(args.runtime), sort_keys=False))
    db = out / "results.db"
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "volbench.cli.main", "lab", "run",
                           str(out / "exp.yaml"), "--db", str(db), "--quiet"], check=False)
    if not db.exists():
        sys.exit(f"volbench lab run failed (exit {done.returncode})")
    # Exit 3: some runs failed, e.g. RAID0's next run after its member was failed.
    print(f"one boot, {time.monotonic() - t0:.0f} s, exit {done.returncode}; database {db}")
    print("\n".join(table(db)))


if __name__ == "__main__":
    main()
