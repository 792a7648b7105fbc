"""One writer per experiment: two `volbench run FILE --db same.db --resume` started together.

Issue 12 §3 saw 10 ok runs stored for 6 planned (4 twice). Each trial starts two such
processes at the same moment on a new database (the harder case: nothing to resume yet)
with 6 planned runs (2 fio cases x 3 repetitions on a directory target), then counts the
ok runs stored, the runs stored twice and how often the second process was refused.
Target: stored = planned, 0 duplicated.

    .venv/bin/python bench/one_writer.py [--trials 5]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from common import write_experiment

PLANNED = 6


def trial(work: Path) -> tuple[int, int, int]:
    """(ok runs stored, runs stored twice, processes refused) of one trial."""
    (work / "target").mkdir()
    exp = write_experiment(work / "exp.yaml", {
        "name": "one-writer", "workdir": str(work / "work"),
        "targets": [{"name": "d", "type": "directory", "path": str(work / "target")}],
        "workloads": [{"name": n, "tool": "fio", "rw": "randread", "bs": "4k", "size": "8M",
                       "runtime": "1s", "direct": False} for n in ("a", "b")],
        "repeat": PLANNED // 2})
    env = {**os.environ, "VOLBENCH_STATE_DIR": str(work / "state")}
    argv = [sys.executable, "-m", "volbench.cli.main", "run", str(exp), "--db",
            str(work / "r.db"), "--resume", "--quiet"]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    with sqlite3.connect(work / "r.db") as con:
        keys = con.execute("SELECT case_key, repetition FROM runs WHERE status = 'ok'").fetchall()
    return len(keys), len(keys) - len(set(keys)), sum("is being run by PID" in e
                                                      for e in errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    stored = duplicated = refused = 0
    for _ in range(args.trials):
        with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volbench-bench-") as tmp:
            s, d, r = trial(Path(tmp))
        stored, duplicated, refused = stored + s, duplicated + d, refused + r
    print(f"trials {args.trials}: planned {PLANNED * args.trials}, stored ok {stored}, "
          f"duplicated {duplicated}, second writer refused {refused} of {args.trials}")


if __name__ == "__main__":
    main()
