"""Start-up: `volbench --version`, `--help` and `plan FILE` beside `fio --version`, in one run.

Each command is started as a whole process, `--reps` times, the commands taking turns (A B
C D A B C D …) so that the machine's load drifts over all of them alike; the medians, the
spread and each one's ratio to fio's are printed, and the load average at the start and
end. The goals (issue 33): --version and --help at most 150 ms, plan at most 300 ms, on a
quiet machine.

    .venv/bin/python bench/startup.py [--reps 21] [--compare SRC]

volbench's own byte code is written first (as pip does for an installed package): a
checkout under PYTHONDONTWRITEBYTECODE would otherwise compile every module at every start
and measure the compiler. `--compare SRC` adds the same commands from another source tree
(say an older commit's `src`, `git archive` into a folder), run with PYTHONPATH=SRC.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import volbench

PLAN = """name: startup
targets:
  - {name: xfs, type: loopdisk, size: 1G}
  - {name: ext4, type: loopdisk, size: 1G, fs: ext4}
workloads:
  - {name: rand4k, tool: fio, rw: randread, bs: 4k, iodepth: 16, size: 256M, runtime: 10}
  - {name: seq1m, tool: fio, rw: read, bs: 1M, iodepth: 4, size: 256M, runtime: 10}
repeat: 3
"""
GOALS = {"--version": 0.150, "--help": 0.150, "plan": 0.300}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--compare", type=Path, metavar="SRC",
                        help="also time another source tree's volbench (PYTHONPATH=SRC)")
    args = parser.parse_args()
    package = Path(volbench.__file__).parent
    compileall.compile_dir(str(package), quiet=2)
    if args.compare:
        compileall.compile_dir(str(args.compare), quiet=2)
    plan = Path(tempfile.mkdtemp(prefix="volbench-startup-")) / "plan.yaml"
    plan.write_text(PLAN)
    entry = Path(sys.executable).with_name("volbench")
    env = dict(os.environ)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "fio --version": (["fio", "--version"], env)}
    shim = [sys.executable, "-c", "import sys; from volbench.cli.main import main; "
            "sys.exit(main())"]
    for tree, (prefix, tree_env) in {"": ([str(entry)], env),
                                     "old ": (shim, {**env, "PYTHONPATH": str(args.compare)})
                                     }.items():
        if tree and not args.compare:
            continue
        commands[f"{tree}volbench --version"] = ([*prefix, "--version"], tree_env)
        commands[f"{tree}volbench --help"] = ([*prefix, "--help"], tree_env)
        commands[f"{tree}volbench plan FILE"] = ([*prefix, "plan", str(plan)], tree_env)
    load_start = os.getloadavg()[0]
    for argv, cmd_env in commands.values():  # one of each first, not counted (disk cache)
        _timed(argv, cmd_env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.reps):
        for name, (argv, cmd_env) in commands.items():
            times[name].append(_timed(argv, cmd_env))
    load_end = os.getloadavg()[0]
    fio = statistics.median(w for w, _ in times["fio --version"])
    print(f"{args.reps} runs each, alternated; load average (1 min) {load_start:.2f} at the "
          f"start, {load_end:.2f} at the end; {os.cpu_count()} CPUs")
    print(f"{'command':<28} {'median wall':>12} {'min':>8} {'max':>8} {'median CPU':>11} "
          f"{'x fio':>7}")
    for name, found in times.items():
        walls = sorted(w for w, _ in found)
        cpu = statistics.median(c for _, c in found)
        median = statistics.median(walls)
        print(f"{name:<28} {median * 1000:9.1f} ms {walls[0] * 1000:5.1f} ms "
              f"{walls[-1] * 1000:5.1f} ms {cpu * 1000:8.1f} ms {median / fio:7.1f}")
    for name, goal in GOALS.items():
        key = f"volbench {name}" if name != "plan" else "volbench plan FILE"
        median = statistics.median(w for w, _ in times[key])
        verdict = "within" if median <= goal else "over"
        print(f"goal: volbench {name} <= {goal * 1000:.0f} ms on a quiet machine: "
              f"{median * 1000:.0f} ms here, {verdict} (load {load_end:.1f})")


if __name__ == "__main__":
    main()
