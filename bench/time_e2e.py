"""End to end on this machine: an unthrottled loop disk and a directory, no burst in either.

Random 4k writes (fio, 40 s a run, 3 repetitions each, interleaved) while a background fio
on another file switches on and off (seeded on/off spells of 5-15 s), the way a shared
machine is busy. Neither disk bursts nor warms up, so any burst/warm-up story is noise.
Prints, per target, how many runs the old detector (commit OLD, bench/changepoint_rates.py)
and the new one call bursty or warming up, on the same stored per-second series, and the
report's time lines and iops verdict.

    .venv/bin/python bench/time_e2e.py [--runtime 40] [--reps 3] [--keep DIR]

Needs root (the loop disk). The background fio is started and stopped by this script
by its PID; its file and the work directory are removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from changepoint_rates import old_detector
from common import volbench, write_experiment
from volbench.stats.changepoint import FLAT, regimes
from volbench.store.db import Store


def background(path: Path, stop: threading.Event, seed: int, log: list[str]) -> None:
    """On/off spells of a second fio (random 4k reads and writes on `path`) until `stop`."""
    rng = random.Random(seed)
    while not stop.is_set():
        child = subprocess.Popen(
            ["fio", "--name=bg", f"--filename={path}", "--size=256M", "--rw=randrw",
             "--bs=4k", "--iodepth=8", "--ioengine=libaio", "--direct=1", "--time_based",
             "--runtime=3600", "--output=/dev/null"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        on, off = rng.uniform(5, 15), rng.uniform(5, 15)
        log.append(f"on {on:.0f} s, off {off:.0f} s")
        stop.wait(on)
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=30)
        stop.wait(off)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=40)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="volbench-time-e2e-", dir="/var/tmp"))
    (work / "dir").mkdir()
    doc = {
        "name": "time-e2e", "workdir": str(work / "work"),
        "targets": [{"name": "loop", "type": "loopdisk", "size": "1G", "fs": "xfs"},
                    {"name": "dir", "type": "directory", "path": str(work / "dir")}],
        "workloads": [{"name": "w4k", "tool": "fio", "rw": "randwrite", "bs": "4k",
                       "iodepth": 16, "size": "256M", "runtime": f"{args.runtime}s"}],
        "repeat": args.reps,
    }
    exp = write_experiment(work / "exp.yaml", doc)
    db = work / "time.db"
    stop, spells = threading.Event(), []
    thread = threading.Thread(target=background, args=(work / "bg.dat", stop, 21, spells))
    thread.start()
    try:
        seconds = volbench("run", str(exp), "--db", str(db), "--quiet", ok_codes=(0, 3))
    finally:
        stop.set()
        thread.join()
    print(f"ran {seconds:.0f} s; background spells: {'; '.join(spells)}")
    old = old_detector()
    with Store(db) as store:
        runs = store.runs([1], series=True)
    print("\n| target | runs | old: burst / warm-up | new: burst / warm-up | whole-run IOPS |")
    print("|---|---|---|---|---|")
    for target in ("loop", "dir"):
        mine = [r for r in runs if r.target == target and not r.warmup]
        was, now, iops = [], [], []
        for run in mine:
            series = [s for s in run.parsed.series if s.name == "iops" and len(s.points) > 0]
            for s in series:
                values = [v for _, v in s.points]
                was.append(old(values).kind)
                now.append(regimes(values).kind)
            iops += [f"{m.value:,.0f}" for m in run.metrics
                     if m.name == "iops" and "window" not in m.tags and m.value]
        print(f"| {target} | {len(mine)} | {_kinds(was)} | {_kinds(now)} | {', '.join(iops)} |")
    report = subprocess.run(
        [sys.executable, "-m", "volbench.cli.main", "report", "--db", str(db), "--format", "json"],
        capture_output=True, text=True, timeout=600, check=False)
    if report.returncode == 0:
        data = json.loads(report.stdout)
        for line in data.get("time", []):
            print(f"time: {line['text']}")
    if args.keep:
        shutil.copytree(work, args.keep, dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)


def _kinds(kinds: list[str]) -> str:
    bursts = sum(k == "burst" for k in kinds)
    warms = sum(k == "warmup" for k in kinds)
    flats = sum(k == FLAT for k in kinds)
    return f"{bursts} / {warms} (flat {flats})"


if __name__ == "__main__":
    main()
