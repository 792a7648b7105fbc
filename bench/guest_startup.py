"""Start-up in the lab guest: `volbench --version` and `volbench run`'s imports by a fresh
Python, for source trees with and without their byte code, taking turns (round-robin).

On the host, prepare the trees (copies under .cache/guest-startup, which the guest sees:
its root is the host's filesystem read-only; /tmp and /var/tmp are the guest's own):

    .venv/bin/python bench/guest_startup.py prepare [--old OLD_SRC]

then measure in the guest (one VM at a time on this machine):

    flock /work/locks/vm.lock .venv/bin/volbench lab exec -- \\
        .venv/bin/python bench/guest_startup.py measure [--reps 3]

and, for comparison, the same `measure` on the host. The guest reads byte code it finds
next to the sources but cannot write any (read-only 9p): "no pyc" is what a host that never
wrote byte code gave every Python in the guest. The last line says how many of volbench's
modules the guest read from their .pyc (`python -v`), and how many it had to compile.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "guest-startup"
CODE = {"--version": "import sys; sys.argv = ['volbench', '--version']\n"
                     "from volbench.cli.main import main\ntry: main()\nexcept SystemExit: pass",
        "run's imports": "import volbench.cli.main, volbench.engine.runner"}


def prepare(old: Path | None) -> None:
    """Copies of this tree (and of `old`), with and without byte code."""
    shutil.rmtree(CACHE, ignore_errors=True)
    trees = {"new": ROOT / "src", **({"old": old} if old else {})}
    for name, src in trees.items():
        for kind in ("pyc", "no-pyc"):
            dest = CACHE / f"{name}-{kind}"
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
            if kind == "pyc":
                compileall.compile_dir(str(dest), quiet=2)
    print(f"prepared {', '.join(sorted(p.name for p in CACHE.iterdir()))} in {CACHE}")


def measure(reps: int) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    trees = sorted(CACHE.iterdir())
    where = "guest" if os.environ.get("VOLBENCH_LAB") == "1" else "host"
    found: dict[tuple[str, str], list[float]] = {}
    bare = []
    for _ in range(reps):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare.append(time.monotonic() - start)
        for what, code in CODE.items():
            for tree in trees:
                start = time.monotonic()
                subprocess.run([sys.executable, "-c", code], check=True,
                               env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL)
                found.setdefault((what, tree.name), []).append(time.monotonic() - start)
    print(f"{where}: {reps} rounds, load {os.getloadavg()[0]:.1f} at the end "
          f"(of the machine it ran on); python -c pass: median {statistics.median(bare):.2f} s")
    for (what, tree), times in found.items():
        print(f"{what:14} {tree:12} median {statistics.median(times):6.2f} s  "
              f"(min {min(times):.2f}, max {max(times):.2f})")
    tree = CACHE / "new-pyc"
    out = subprocess.run([sys.executable, "-v", "-c", CODE["run's imports"]], text=True,
                         env={**env, "PYTHONPATH": str(tree)}, capture_output=True).stderr
    ours = [line for line in out.splitlines() if str(tree) in line]
    read = sum(line.startswith("# code object from") for line in ours)
    compiled = sum("could not create" in line or "bytecode is stale" in line for line in ours)
    print(f"new-pyc: {read} volbench modules read from their .pyc, {compiled} compiled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--old", type=Path, help="another source tree (an older commit's src)")
    meas = sub.add_parser("measure")
    meas.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.old)
    else:
        measure(args.reps)


if __name__ == "__main__":
    main()
