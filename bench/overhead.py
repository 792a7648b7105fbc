"""Overhead: share of an experiment's wall time spent outside the workload processes.

Two loop-disk targets × two fio cases × 3 repetitions of 10-second jobs. Wall time of
`volbench run` against the sum of the measured fio processes' own durations.
Target (issue 25): <= 1 % outside the workload processes, <= 50 ms per run between two
runs (the median gap printed last: parse, store, sync, start the next).

    sudo .venv/bin/python bench/overhead.py [--runtime 10] [--profile]

With --profile, volbench runs under cProfile and the time of each step between one
run's end and the next run's start (and inside a run's span, around the tool) is
printed per run: where the overhead goes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pstats
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import volbench, write_experiment
from volbench.system import containment, journal, proc

# The harness's steps around the tool, by (file ending, function): what each costs per run.
STEPS = {
    ("engine/execution.py", "settle_caches"): "sync (and drop caches when not direct I/O)",
    ("workloads/fio.py", "command"): "building fio's command line and job",
    ("system/block/space.py", "entries"): "listing the target before the run",
    ("system/block/diskstats.py", "read"): "device I/O counters (before + after)",
    ("system/block/cgroups.py", "serviced"): "cgroup I/O counters (before + after)",
    ("system/host/activity.py", "snapshot"): "host activity snapshots (before + after)",
    ("subprocess.py", "_execute_child"): "fork, join the cgroup, exec (inside the span)",
    ("system/journal.py", "process_started"): "journal the started process (inside the span)",
    ("system/journal.py", "process_ended"): "journal the ended process (inside the span)",
    ("engine/execution.py", "collect_outputs"): "reading the outputs",
    ("workloads/fio.py", "parse_output"): "parsing fio's JSON and logs",
    ("stats/windows.py", "with_windows"): "burst and warm-up windows",
    ("store/db.py", "save_run"): "storing the run (one commit)",
    ("engine/runner.py", "fingerprint"): "environment fingerprint (once per target)",
    ("shutil.py", "rmtree"): "removing the run directory",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="run under cProfile and print where the time around fio goes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="volbench-bench-"))
    exp = write_experiment(work / "exp.yaml", {
        "name": "overhead", "workdir": str(work),
        "targets": [{"name": "xfs", "type": "loopdisk", "size": "1G"},
                    {"name": "ext4", "type": "loopdisk", "size": "1G", "fs": "ext4"}],
        "workloads": [
            {"name": "rand4k", "tool": "fio", "rw": "randread", "bs": "4k", "iodepth": 16,
             "size": "256M", "runtime": args.runtime},
            {"name": "seq1m", "tool": "fio", "rw": "read", "bs": "1M", "iodepth": 4,
             "size": "256M", "runtime": args.runtime}],
        "repeat": args.repeat})
    db = work / "overhead.db"
    profile = work / "profile.out"
    timed = work / "spans.jsonl"
    launched = time.time()
    # Under cProfile there are no spans (the profile is the breakdown); otherwise the CLI
    # runs through bench/spans.py, which times the method's own steps from inside.
    wall = volbench("run", str(exp), "--db", str(db), "--quiet",
                    python=(("-m", "cProfile", "-o", str(profile)) if args.profile else
                            (str(Path(__file__).with_name("spans.py")), str(timed))))
    with sqlite3.connect(db) as con:
        inside, runs = con.execute("SELECT SUM(ended - started), COUNT(*) FROM runs "
                                   "WHERE status = 'ok'").fetchone()
        first = con.execute("SELECT MIN(started) FROM runs").fetchone()[0]
        spans = con.execute("SELECT target, started, ended FROM runs ORDER BY started").fetchall()
        created, finished = con.execute("SELECT created, finished FROM experiments").fetchone()
        last = con.execute("SELECT MAX(ended) FROM runs").fetchone()[0]
    outside = wall - inside
    print(f"{runs} runs of {args.runtime} s: wall {wall:.1f} s, inside fio {inside:.1f} s, "
          f"outside {outside:.1f} s = {outside / wall * 100:.1f} % (target <= 5 %)")
    print(f"of which before the first run (start-up, environment capture, target builds, "
          f"fio layout): {first - created:.1f} s; per run otherwise: "
          f"{(outside - (first - created)) / runs:.2f} s")
    print(f"outside fio, in order: start-up and import {created - launched:.1f} s, "
          f"environment, target builds and layouts {first - created:.1f} s, between runs "
          f"{last - first - inside:.1f} s, teardown {finished - last:.1f} s, report and exit "
          f"{launched + wall - finished:.1f} s")
    if timed.exists():
        method(timed, outside, wall)
    gaps = [b[1] - a[2] for a, b in itertools.pairwise(spans)]
    if gaps:
        print(f"gap between two runs: median "
              f"{statistics.median(gaps) * 1000:.0f}"
              f" ms, max {max(gaps) * 1000:.0f} ms over {len(gaps)} gaps (target <= 50 ms)")
    # A target's first run is preceded by its untimed layout (fio writes the data file):
    # the method's cost, not the harness's. The gaps before the others are the harness's.
    seen = {spans[0][0]} if spans else set()
    steady = []
    for a, b in itertools.pairwise(spans):
        if b[0] in seen:
            steady.append(b[1] - a[2])
        seen.add(b[0])
    if steady:
        print(f"gap before a run on a target already laid out: median "
              f"{statistics.median(steady) * 1000:.0f} ms, range {min(steady) * 1000:.0f}-"
              f"{max(steady) * 1000:.0f} ms over {len(steady)} gaps")
    process_cost()
    print(f"load average at the end (1 min): {os.getloadavg()[0]:.2f}; other engineers share "
          "this 2-core machine")
    if args.profile:
        breakdown(profile, runs)


def method(timed: Path, outside: float, wall: float) -> None:
    """Split the time outside the measured runs into the method's steps (bench/spans.py)
    and what is left: volbench's own (start-up, environment, the gaps, report, exit)."""
    steps = [json.loads(line) for line in timed.read_text().splitlines()]
    def total(what: str) -> float:
        return sum(s["end"] - s["start"] for s in steps if s["what"] == what)
    groups = [s for s in steps if s["what"] == "group"]
    runs = [s for s in steps if s["what"] == "runs"]
    teardown = sum(g["end"] - r["end"] for g, r in zip(groups, runs, strict=True))
    build, layout = total("build"), total("layout")
    own = outside - build - layout - teardown
    print(f"the method's steps outside the runs: target builds {build:.2f} s, fio's data-file "
          f"layouts {layout:.2f} s (a fio process), teardown {teardown:.2f} s; volbench's own "
          f"time: {own:.2f} s = {own / wall * 100:.1f} % of the wall; outside any fio process "
          f"(layouts counted as fio): {outside - layout:.2f} s = "
          f"{(outside - layout) / wall * 100:.1f} %")


def process_cost(trials: int = 40) -> None:
    """What proc.run itself adds to starting and reaping a process (contained in a run
    cgroup, journaled, as in a run) against a bare subprocess.run, alternated."""
    ours, bare = [], []
    with journal.opened("overhead bench") as jrnl:
        scope = jrnl.scope()
        try:
            containment.begin(scope)
            for _ in range(trials):
                start = time.perf_counter()
                proc.run(["true"], timeout=30, tracker=jrnl)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                subprocess.run(["true"], check=True)
                bare.append(time.perf_counter() - start)
        finally:
            scope.close()
    print(f"start and reap `true`: proc.run (cgroup, journal) median "
          f"{statistics.median(ours) * 1000:.1f} ms, bare subprocess.run "
          f"{statistics.median(bare) * 1000:.1f} ms ({trials} each, alternated)")


def breakdown(profile: Path, runs: int) -> None:
    """Each step's cumulative time per measured run (cProfile slows Python-heavy steps)."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    total = 0.0
    print(f"per run, from cProfile over {runs} runs:")
    for (file, _, name), (_, calls, _, cumulative, _) in sorted(stats.items()):
        for (ending, step), what in STEPS.items():
            if file.endswith(ending) and name == step:
                total += cumulative / runs
                print(f"  {cumulative / runs * 1000:6.1f} ms  {what} ({calls} calls)")
    print(f"  {total * 1000:6.1f} ms  sum of the steps above")


if __name__ == "__main__":
    main()
