"""Kill volbench at random moments and count what was lost, stored twice or left behind.

Each trial runs a small real experiment through the CLI (loop-disk, throttled and
directory targets with fio, or PostgreSQL + pgbench), sends SIGKILL (to volbench's whole
process group, then `volbench cleanup`), SIGTERM or SIGINT at a random moment — half of
the time 0.15-0.6 s after the workload tool starts, where fio's setsid'd job worker once
escaped — then checks, before anything else runs, for processes, loop devices, mounts,
cgroups and journals left behind (and notes PostgreSQL segments new in /dev/shm); finally
`--resume` completes the experiment and the stored runs are counted against the plan.

    sudo .venv/bin/python bench/chaos.py [--trials 30] [--seed 1]
    sudo .venv/bin/python bench/chaos.py --trials 12 --seed 1000 --shape fio --signal KILL \
        --anchor tool      # the reported leak's window

Prints trials, lost, duplicated, leaked (target 0 / 0 / 0) and one line per trial.

    sudo .venv/bin/python bench/chaos.py --vectors   # the pgbench/PostgreSQL attack vectors

runs instead every vector of bench/pgvectors.py against sentinels (bench/chaos_vectors.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

BLKIO = Path("/sys/fs/cgroup/blkio")
TAG = "VOLBENCH_CHAOS_TRIAL"
SIGNALS = ("KILL", "TERM", "INT")
SHAPES = ("fio", "pgbench")
# A kill this long after the tool starts hit the window where fio's worker escaped.
TOOL_WINDOW = (0.15, 0.6)
RESUME_TIMEOUT = 900


@dataclass
class Trial:
    seed: int
    shape: str
    sig: str
    anchor: str
    delay: float
    planned: int = 0
    lost: int = 0
    duplicated: int = 0
    leaked: list[str] = field(default_factory=list)
    exit_code: int | None = None
    note: str = ""

    def line(self) -> str:
        leaks = "; ".join(self.leaked) or "-"
        return (f"seed {self.seed:>4}  {self.shape:<7} SIG{self.sig:<4} {self.anchor:<5} "
                f"+{self.delay:4.2f}s  exit {self.exit_code}  lost {self.lost}  "
                f"dup {self.duplicated}  leaked {leaks}{'  ' + self.note if self.note else ''}")


def experiment(work: Path, shape: str) -> dict[str, Any]:
    throttled = {"name": "thr", "type": "loopdisk", "size": "512M",
                 "limits": {"read_iops": 2000, "write_iops": 2000}}
    directory = {"name": "dir", "type": "directory", "path": str(work / "dirtarget")}
    if shape == "fio":
        targets = [{"name": "loop", "type": "loopdisk", "size": "256M", "fs": "ext4"},
                   throttled, directory]
        workloads = [{"name": "w", "tool": "fio", "rw": "randwrite", "bs": "4k",
                      "size": "16M", "runtime": "1s", "numjobs": 2}]
    else:
        targets = [throttled, directory]
        workloads = [{"name": "pg", "tool": "pgbench", "scale": 1, "clients": 2,
                      "duration": "1s"}]
    return {"name": f"chaos-{shape}", "workdir": str(work), "targets": targets,
            "workloads": workloads, "repeat": 2}


def volbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "volbench.cli.main", *args]


def _environ_has(pid: str, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def tagged_processes(tag: str) -> list[str]:
    """Live processes (not zombies) carrying this trial's tag in their environment."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _environ_has(entry.name, needle):
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            found.append(f"process {entry.name} {stat[stat.index('(') + 1:stat.rindex(')')]}")
    return found


def tool_started(tag: str, tools: tuple[str, ...]) -> bool:
    """A measured run's tool runs (not fio's untimed layout of its data file)."""
    for found in tagged_processes(tag):
        _, pid, comm = found.split(maxsplit=2)
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if comm in tools and b"--name=layout" not in argv and b"--version" not in argv:
            return True
    return False


SHM = Path("/dev/shm")


def shm_segments() -> set[str]:
    """PostgreSQL's POSIX shared memory segments now in /dev/shm."""
    return {p.name for p in SHM.glob("PostgreSQL.*")}


def mapped_anywhere(names: set[str]) -> set[str]:
    """Those of `names` some live process maps (another cluster's, still in use)."""
    used: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:
            continue
        used |= {n for n in names if n in text}
    return used


def unmapped_new_segments(before: set[str]) -> list[str]:
    """PostgreSQL segments in /dev/shm that appeared during the trial and that no live
    process maps. A note, not a leak: on a shared machine another cluster killed in the
    same seconds leaves the same (volbench's own keep theirs in the data directory,
    docs/safety.md; tests/system/test_pg_attacks.py checks that exactly)."""
    new = shm_segments() - before
    return sorted(new - mapped_anywhere(new))


def sandbox_users() -> set[str]:
    """The volbench-* system users there are now."""
    return {line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines()
            if line.startswith("volbench-")}


def leftovers(work: Path, tag: str, state: Path, pid: int, users_before: set[str]
              ) -> list[str]:
    found = tagged_processes(tag)
    out = subprocess.run(["losetup", "--json", "--list"], capture_output=True, text=True,
                         timeout=30).stdout
    for dev in json.loads(out).get("loopdevices", []) if out.strip() else []:
        if str(dev.get("back-file") or "").startswith(str(work)):
            found.append(f"loop {dev['name']}")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        mountpoint = line.split()[1]
        if mountpoint.startswith(str(work)):
            found.append(f"mount {mountpoint}")
    found += [f"cgroup {p.name}" for p in BLKIO.glob(f"volbench-{pid}-*")]
    # pgbench's sandbox user (system/sandbox.py): made per run, gone with it. Its
    # processes carry no trial tag (the sandbox's environment is volbench's own), but
    # they end with the sandbox's PID namespace; a user left is a leak.
    found += [f"sandbox user {u}" for u in sorted(sandbox_users() - users_before)]
    found += [f"journal {p.name}" for p in (state / "journals").glob("*.jsonl")]
    return found


def _end_leaked(tag: str) -> None:
    """SIGKILL, by PID, the processes of this trial volbench failed to end."""
    for found in tagged_processes(tag):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(found.split()[1]), signal.SIGKILL)


def count_runs(db: Path) -> tuple[int, int]:
    """(distinct finished run keys, ok rows) of the database's one experiment."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT target, case_key, repetition, warmup FROM runs "
                           "WHERE status = 'ok'").fetchall()
    return len(set(rows)), len(rows)


def planned_runs(file: Path, env: dict[str, str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from volbench.engine.experiment import load
    from volbench.engine.plan import make_plan

    exp = load(file)
    return len(make_plan(exp, seed=1).runs(exp.repeat.min))


def _kill(child: subprocess.Popen[bytes], sig: str) -> None:
    if sig == "KILL":
        os.killpg(child.pid, signal.SIGKILL)  # volbench and anything left in its group
    else:
        child.send_signal(getattr(signal, f"SIG{sig}"))


def run_trial(seed: int, root: Path, *, shape: str | None = None, sig: str | None = None,
              anchor: str | None = None) -> Trial:
    """One trial; its shape, signal and moment come from the seed unless given."""
    rng = random.Random(seed)
    trial = Trial(seed, rng.choice(SHAPES), rng.choice(SIGNALS),
                  rng.choice(("start", "tool")), 0.0)
    trial.shape, trial.sig, trial.anchor = (shape or trial.shape, sig or trial.sig,
                                            anchor or trial.anchor)
    trial.delay = (rng.uniform(*TOOL_WINDOW) if trial.anchor == "tool"
                   else rng.uniform(0.2, 12.0 if trial.shape == "fio" else 15.0))
    work = Path(tempfile.mkdtemp(dir=root, prefix=f"chaos-{seed}-"))
    work.chmod(0o755)  # the postgres user reaches its socket directory through it
    tag = uuid.uuid4().hex
    state = work / "state"
    env = {**os.environ, TAG: tag, "VOLBENCH_STATE_DIR": str(state),
           "VOLBENCH_LOOP_WAIT": "600"}
    file = work / "exp.yaml"
    file.write_text(yaml.safe_dump(experiment(work, trial.shape)))
    (work / "dirtarget").mkdir()
    db = work / "chaos.db"
    trial.planned = planned_runs(file, env)
    shm_before = shm_segments()
    users_before = sandbox_users()
    child = subprocess.Popen(volbench("run", str(file), "--db", str(db), "--quiet"), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    tools = ("fio",) if trial.shape == "fio" else ("pgbench", "postgres")
    deadline = time.monotonic() + 120
    while trial.anchor == "tool" and not tool_started(tag, tools):
        if child.poll() is not None or time.monotonic() > deadline:
            trial.note = "tool never seen"
            break
        time.sleep(0.01)
    time.sleep(trial.delay)
    if child.poll() is None:
        _kill(child, trial.sig)
    else:
        trial.note = "finished before the signal"
    _, err = child.communicate(timeout=300)
    trial.exit_code = child.returncode
    if trial.sig == "KILL":
        time.sleep(0.3)
        cleaned = subprocess.run(volbench("cleanup"), env=env, capture_output=True, text=True,
                                 timeout=300)
        if cleaned.returncode != 0:
            trial.note += f" cleanup failed: {cleaned.stderr.strip()[-200:]}"
    elif trial.exit_code == 0 and not trial.note:
        trial.note += f" signal ignored? {err.decode(errors='replace').strip()[-300:]}"
    elif trial.exit_code not in (0, 130):
        trial.note += f" exit {trial.exit_code}: {err.decode(errors='replace').strip()[-200:]}"
    trial.leaked = leftovers(work, tag, state, child.pid, users_before)
    shm = unmapped_new_segments(shm_before)
    if shm:
        trial.note += f" /dev/shm segments left by some cluster: {', '.join(shm)}"
    _end_leaked(tag)  # so one leak does not disturb the next trials
    try:
        resumed = subprocess.run(volbench("run", str(file), "--db", str(db), "--resume",
                                          "--quiet"), env=env, capture_output=True, text=True,
                                 timeout=RESUME_TIMEOUT)
        if resumed.returncode != 0:
            trial.note += f" resume exit {resumed.returncode}: {resumed.stderr.strip()[-200:]}"
    except subprocess.TimeoutExpired:
        # subprocess.run SIGKILLed the resume: finish its teardown the documented way.
        trial.note += f" resume still running after {RESUME_TIMEOUT} s: stopped, cleaned up"
        subprocess.run(volbench("cleanup"), env=env, capture_output=True, timeout=300)
        _end_leaked(tag)
    distinct, rows = count_runs(db) if db.exists() else (0, 0)
    trial.lost = trial.planned - distinct
    trial.duplicated = rows - distinct
    if trial.lost and db.exists():
        with sqlite3.connect(db) as con:
            failed = con.execute("SELECT error FROM runs WHERE status != 'ok'").fetchall()
        trial.note += f" failed runs: {'; '.join(e[0][:160] for e in failed[:2])}"
    subprocess.run(["rm", "-rf", str(work)], timeout=120)
    return trial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1, help="first trial's seed")
    parser.add_argument("--shape", choices=SHAPES, help="only this experiment")
    parser.add_argument("--signal", choices=SIGNALS, help="only this signal")
    parser.add_argument("--anchor", choices=("start", "tool"),
                        help="time the signal from volbench's start or the tool's")
    parser.add_argument("--vectors", action="store_true",
                        help="instead of kills: every pgbench/PostgreSQL attack vector of "
                        "bench/pgvectors.py against sentinels (bench/chaos_vectors.py)")
    args = parser.parse_args()
    root = Path("/var/tmp")  # images need O_DIRECT: not tmpfs
    if args.vectors:
        vectors(root)
        return
    trials = []
    for seed in range(args.seed, args.seed + args.trials):
        trial = run_trial(seed, root, shape=args.shape, sig=args.signal, anchor=args.anchor)
        trials.append(trial)
        print(trial.line(), flush=True)
    leaked = sum(1 for t in trials if t.leaked)
    print(f"trials {len(trials)}  lost {sum(t.lost for t in trials)}  "
          f"duplicated {sum(t.duplicated for t in trials)}  leaked {leaked}")


def vectors(root: Path) -> None:
    """The attack vectors, with a sentinel loop device of their own."""
    from chaos_vectors import run_vectors

    work = Path(tempfile.mkdtemp(dir=root, prefix="vectors-loop-"))
    image = work / "sentinel.img"
    image.write_bytes(os.urandom(1 << 20) * 8)
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True,
                          text=True, check=True).stdout.strip()
    try:
        outcomes = run_vectors(root, loop)
    finally:
        subprocess.run(["losetup", "--detach", loop], check=True)
        subprocess.run(["rm", "-rf", str(work)], timeout=120)
    for outcome in outcomes:
        print(outcome.line(), flush=True)
    kinds = sorted({o.vector.kind for o in outcomes})
    for kind in kinds:
        mine = [o for o in outcomes if o.vector.kind == kind]
        print(f"{kind}: {len(mine)} vectors, "
              f"{sum(o.outcome == 'refused' for o in mine)} refused, "
              f"{sum(o.outcome == 'contained' for o in mine)} contained, "
              f"{sum(o.outcome == 'ESCAPED' for o in mine)} escaped")
    print(f"vectors {len(outcomes)}  escaped {sum(o.outcome == 'ESCAPED' for o in outcomes)}")


if __name__ == "__main__":
    main()
