"""The small-file job: a seeded tree of source-like files, put through git, copied, deleted.

Run as `python -m volbench.jobs.smallfiles --dir DIR --files N --seed S --out FILE`.
Each phase is timed here: real (monotonic clock) and user/sys CPU (getrusage of
this process and of its reaped children, i.e. git, cp and rm), so `other` =
real − user − sys is the time spent waiting, mostly for the disk. With sync on
(the default) every phase ends with syncfs() on the target filesystem, so data
written in a phase counts in that phase instead of whenever the kernel flushes.

The content is deterministic: the same seed gives the same files, byte for byte,
and fixed author dates give the same commits. git runs with the user's and the
system's configuration ignored and automatic gc/maintenance off, so no
background work lands in a later phase.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from volbench.core.errors import VolbenchError
from volbench.system import proc

PHASES = ("create", "add", "commit", "modify", "gc", "copy", "delete")
FILES_PER_DIR = 32
# Fraction of files changed, removed and added in the modify phase.
MODIFY, REMOVE, ADD = 0.10, 0.02, 0.02
GIT_CONFIG = (
    "gc.auto=0",
    "gc.autoDetach=false",
    "maintenance.auto=false",
    "init.defaultBranch=main",
    "user.name=volbench",
    "user.email=volbench@localhost",
    "commit.gpgSign=false",
    "advice.detachedHead=false",
)
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}
STEP_TIMEOUT = 3600.0
_WORDS = (
    "buffer",
    "count",
    "device",
    "entry",
    "flags",
    "index",
    "inode",
    "length",
    "lock",
    "node",
    "offset",
    "page",
    "queue",
    "request",
    "result",
    "sector",
    "size",
    "state",
    "table",
    "value",
    "block",
    "cache",
    "extent",
    "journal",
    "mount",
    "volume",
)
_TYPES = ("int", "long", "size_t", "u32", "u64", "bool", "char *", "struct node *")


@dataclass
class Phase:
    phase: str
    real: float
    user: float
    sys: float


def _line_pool(rng: random.Random, n: int = 4096) -> list[str]:
    """Lines that look like C source: declarations, calls, conditions, comments."""

    def ident() -> str:
        return "_".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))

    shapes: list[Callable[[], str]] = [
        lambda: f"\t{rng.choice(_TYPES)} {ident()} = {rng.randint(0, 4096)};",
        lambda: f"\tif ({ident()} > {ident()})",
        lambda: f"\t\t{ident()}({ident()}, {ident()}, {rng.randint(0, 64)});",
        lambda: f"\treturn {ident()};",
        lambda: f"/* {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10)))} */",
        lambda: f"static {rng.choice(_TYPES)} {ident()}(struct {ident()} *p)",
        lambda: "{",
        lambda: "}",
        lambda: "",
    ]
    return [rng.choice(shapes)() for _ in range(n)]


def _content(rng: random.Random, pool: list[str]) -> str:
    # Log-normal sizes: median ~3 KiB, a few files of tens of KiB, like a source tree.
    size = min(64 * 1024, max(100, int(rng.lognormvariate(8.0, 1.0))))
    lines = rng.choices(pool, k=max(1, size // 24))
    return "\n".join(lines) + "\n"


def _path(tree: Path, i: int) -> Path:
    """32 files per directory, 32 directories per top-level directory."""
    top, sub = divmod(i // FILES_PER_DIR, FILES_PER_DIR)
    return tree / f"d{top:02d}" / f"s{sub:02d}" / f"f{i:06d}.c"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + kids.ru_utime, own.ru_stime + kids.ru_stime


def _syncfs(path: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs({path}) failed: {os.strerror(err)}")
    finally:
        os.close(fd)


class Job:
    def __init__(self, root: Path, files: int, seed: int, sync: bool) -> None:
        self.root, self.files, self.seed, self.sync = root, files, seed, sync
        self.tree, self.copy = root / "tree", root / "copy"
        self.rng = random.Random(seed)
        self.pool = _line_pool(self.rng)
        self.phases: list[Phase] = []
        self.bytes_written = 0
        self.bytes_created = 0

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        user0, sys0 = _cpu()
        t0 = time.monotonic()
        yield
        if self.sync:
            _syncfs(self.root)
        real = time.monotonic() - t0
        user1, sys1 = _cpu()
        self.phases.append(Phase(name, real, user1 - user0, sys1 - sys0))

    def run(self, argv: list[str], cwd: Path) -> None:
        proc.run(argv, timeout=STEP_TIMEOUT, cwd=cwd, env=GIT_ENV)

    def git(self, *args: str) -> None:
        config = [a for c in GIT_CONFIG for a in ("-c", c)]
        self.run(["git", *config, *args], self.tree)

    def write(self, i: int) -> None:
        path = _path(self.tree, i)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _content(self.rng, self.pool)
        path.write_text(data)
        self.bytes_written += len(data)

    def modify(self) -> None:
        n = self.files
        for i in self.rng.sample(range(n), int(n * MODIFY)):
            path = _path(self.tree, i)
            if path.exists():
                lines = path.read_text().splitlines()
                lines[self.rng.randrange(len(lines))] = self.rng.choice(self.pool)
                path.write_text("\n".join([*lines, self.rng.choice(self.pool)]) + "\n")
        for i in self.rng.sample(range(n), int(n * REMOVE)):
            _path(self.tree, i).unlink(missing_ok=True)
        for i in range(n, n + int(n * ADD)):
            self.write(i)

    def main(self) -> list[Phase]:
        with self.timed("create"):
            for i in range(self.files):
                self.write(i)
        self.bytes_created = self.bytes_written
        with self.timed("add"):
            self.git("init", "-q")
            self.git("add", "-A")
        with self.timed("commit"):
            self.git("commit", "-q", "-m", f"{self.files} files, seed {self.seed}")
        with self.timed("modify"):
            self.modify()
            self.git("add", "-A")
            self.git("commit", "-q", "-m", "modify")
        with self.timed("gc"):
            self.git("gc", "--quiet", "--prune=now")
        with self.timed("copy"):
            self.run(["cp", "-a", str(self.tree), str(self.copy)], self.root)
        with self.timed("delete"):
            self.run(["rm", "-rf", str(self.tree), str(self.copy)], self.root)
        return self.phases


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m volbench.jobs.smallfiles",
        description="volbench's small-file job (times its phases)",
    )
    p.add_argument("--dir", type=Path, required=True, help="empty or missing work directory")
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, required=True, help="JSON results file")
    p.add_argument("--no-sync", action="store_true", help="do not syncfs() after each phase")
    args = p.parse_args(argv)
    if args.files < 1:
        p.error("--files must be at least 1")
    try:
        args.dir.mkdir(parents=True, exist_ok=True)
        if any(args.dir.iterdir()):
            raise VolbenchError(f"{args.dir} is not empty; give the job a fresh directory")
        job = Job(args.dir, args.files, args.seed, not args.no_sync)
        phases = job.main()
    except (VolbenchError, OSError) as exc:
        print(f"smallfiles: {exc}", file=sys.stderr)
        return 1
    result = {
        "files": args.files,
        "seed": args.seed,
        "sync": not args.no_sync,
        "bytes_created": job.bytes_created,
        "phases": [asdict(ph) for ph in phases],
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
