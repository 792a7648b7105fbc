"""The guest side of the lab: the script the VM runs, and the run it starts.

The guest sees the host's filesystem read-only over 9p (so the host's volbench
and its virtualenv run there unchanged), with tmpfs overlays on /tmp, /srv,
/var … and one writable folder shared with the host: the run's outdir. The
script prepares what volbench needs there:

- a writable HOME and TARGETCLI_HOME, LVM_SUPPRESS_FD_WARNINGS=1 (/root is read-only);
- the kernel modules of the LVM, md, NFS and iSCSI targets (the guest kernel has them
  even where the host kernel does not);
- cgroup v1 blkio at /sys/fs/cgroup/blkio, where volbench's `limits:` look for it
  (the guest boots with cgroup2 only; blkio throttling then works as on a host);
- udev settled, so /dev/disk/by-id/virtio-NAME exists for every lab disk;

then runs the command and writes its exit code next to the markers the host
watches (`booted` = first guest command, `ready` = preparation done).

`python -m volbench.cli.labguest --outdir OUT -- run FILE …` runs `volbench run`
inside the guest with its database on guest tmpfs (SQLite locking over 9p is
not to be trusted), copied in from OUT before and back to OUT after. When the
host is interrupted (Ctrl-C, SIGTERM) it creates OUT/.lab/stop: the guest's
volbench then stops as it would on a host, and the runs it finished come back.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sqlite3
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from volbench.lab.events import PROGRESS
from volbench.system.host.hostinfo import INSIDE_LAB, PROGRESS_EVENTS

# Guest paths that are tmpfs (not the host's files): a command cannot start there.
GUEST_PRIVATE = (
    "/var/tmp",
    "/var/log",
    "/var/cache",
    "/var/lib/private",
    "/var/lib/apt",
    "/run",
    "/dev",
    "/proc",
    "/sys",
)
GUEST_WORK = Path("/srv/volbench")
# The host creates this file in OUTDIR/.lab to ask the guest's volbench to stop cleanly.
STOP = "stop"
# The folder in OUTDIR/.lab where the guest asks the host for lab-disk faults (QMP).
CHANNEL = "faults"
MARKERS = ("booted", "ready", "exitcode", "modules-missing", "setup-failed", STOP, PROGRESS)

_TEMPLATE = """#!/bin/sh
# Written by volbench (volbench/lab/guest.py) for one lab run; the guest runs it as root.
lab={lab}
cat /proc/uptime > "$lab/booted"
export LVM_SUPPRESS_FD_WARNINGS=1 VOLBENCH_STATE_DIR=/run/volbench {inside}=1
export VOLBENCH_LAB_CHANNEL="$lab/{channel}"
export HOME=/tmp/volbench-home TARGETCLI_HOME=/tmp/volbench-targetcli
export PATH={bindir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
{exports}
mkdir -p "$HOME" "$TARGETCLI_HOME" {work}
modprobe -a {modules} 2>/dev/null  # one process: each start costs ~0.3 s under emulation
{module_checks}
if [ ! -e /sys/fs/cgroup/blkio ]; then
  {{ mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup &&
    mkdir /sys/fs/cgroup/blkio &&
    mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio; }} || echo blkio >> "$lab/setup-failed"
fi
# The host's files that every process reads (Python, volbench, the tools and their
# libraries) through a second share of the host's root with the guest's page cache on:
# the root share caches nothing, so each open and stat is a trip through the emulator's
# main loop (docs/lab.md: `import volbench.cli.main` 103-133 s -> 23-35 s, fio --version
# 13-17 s -> 2-3 s on a busy host). Read-only, and nothing there changes during a boot.
if mkdir -p {cached_root} &&
   mount -t 9p -o ro,trans=virtio,version=9p2000.L,access=any,msize=524288,cache=loose \
     {cached_tag} {cached_root}; then
  for d in {cached_dirs}; do
    [ -d "$d" ] && mount --bind "{cached_root}$d" "$d" || echo "$d" >> "$lab/uncached"
  done
else
  echo all >> "$lab/uncached"
fi
udevadm settle --timeout=60 || echo udev >> "$lab/setup-failed"
cat /proc/uptime > "$lab/ready"
cd {cwd} || exit 90
{command}
echo $? > "$lab/exitcode"
"""


# The tag of the cached share of the host's root (lab/vm.py adds it) and where it is mounted.
CACHED_TAG = "volbench-ro"
CACHED_ROOT = "/run/volbench-ro"


def cached_dirs(package: Path, prefix: str, base_prefix: str, stdlib: str) -> list[str]:
    """The host's folders the guest reads through the cached share: this Python (its
    whole install, unless that is /usr: then its standard library), the virtualenv, the
    checkout volbench runs from (the folder holding `src/`, so tests/ too), the tools'
    folders and the system's libraries. A folder inside another is left out."""
    system = ("/usr", "/usr/local")
    wanted = [stdlib if base_prefix in system else base_prefix,
              "" if prefix in system else prefix,  # a virtualenv's folder
              "/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu"]
    root = package.parent  # .../src or site-packages
    wanted.append(str(root.parent if root.name == "src" else root))
    paths = sorted({str(Path(p)) for p in wanted if p and Path(p) not in map(Path, ("/", *system))})
    return [p for p in paths if not any(p.startswith(q + "/") for q in paths if q != p)]


def compile_package(package: Path) -> bool:
    """Write the byte code of volbench's own modules on the host, before the guest starts.

    The guest reads the host's files read-only over 9p: a module whose __pycache__ holds
    no current .pyc is compiled again by every Python the guest starts, and the result
    cannot be saved there. A host that never wrote byte code (PYTHONDONTWRITEBYTECODE, a
    fresh checkout, a module only the guest imports) left the guest compiling the whole
    package at every start: under emulation ~40 % of the seconds an import of the
    command line took (docs/lab.md, "Start-up in the guest"). pip compiles installed
    packages itself; an editable checkout is compiled here, and only what is stale.
    False when the tree cannot be written (a read-only install): then it stays as it is."""
    import compileall

    try:
        return bool(compileall.compile_dir(str(package), quiet=2, workers=1))
    except OSError:
        return False


def guest_cwd(cwd: Path, outdir: Path) -> Path:
    """`cwd` if the guest sees the host's files there, else the shared outdir."""
    text = str(cwd.resolve())
    if any(text == p or text.startswith(p + "/") for p in GUEST_PRIVATE):
        return outdir
    return cwd


def script(
    lab: Path,
    argv: Sequence[str],
    *,
    cwd: Path,
    modules: Sequence[str],
    env: Mapping[str, str],
    bindir: Path,
) -> str:
    """The guest script (see the module doc); every value is shell-quoted."""
    q = shlex.quote
    exports = "\n".join(f"export {k}={q(v)}" for k, v in env.items() if k.isidentifier())
    package = Path(__file__).resolve().parents[1]
    cached = cached_dirs(package, sys.prefix, sys.base_prefix,
                         sysconfig.get_paths()["stdlib"])
    return _TEMPLATE.format(
        cached_root=CACHED_ROOT,
        cached_tag=CACHED_TAG,
        cached_dirs=" ".join(q(d) for d in cached),
        lab=q(str(lab)),
        inside=INSIDE_LAB,
        channel=CHANNEL,
        bindir=q(str(bindir)),
        exports=exports,
        work=q(str(GUEST_WORK)),
        modules=" ".join(q(m) for m in modules),
        module_checks="\n".join(
            f'[ -d /sys/module/{q(m.replace("-", "_"))} ] || echo {q(m)} >> "$lab/modules-missing"'
            for m in modules
        ),
        cwd=q(str(cwd)),
        command=shlex.join(argv),
    )


def _copy_db(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file (the backup API), written under a temporary name."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(tmp) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    tmp.replace(target)


def stop_when_asked(flag: Path, interval: float = 0.5) -> threading.Thread:
    """SIGTERM this process once `flag` exists: how the host asks for a clean stop.

    The guest's volbench then tears down and records the run in progress as
    interrupted, like on a host, and `main` still copies the database back.
    """

    def watch() -> None:
        while not flag.exists():
            time.sleep(interval)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="lab-stop", daemon=True)
    thread.start()
    return thread


def run_in_guest(outdir: Path, cli_args: Sequence[str],
                 cli_main: Callable[[list[str]], int]) -> int:
    """In the guest: `cli_main(cli_args + --db)` with the database copied from and back to
    outdir. The caller passes the command line's main, so the lab does not import cli."""
    stop_when_asked(outdir / ".lab" / STOP)
    GUEST_WORK.mkdir(parents=True, exist_ok=True)
    db = GUEST_WORK / "results.db"
    shared = outdir / "results.db"
    if shared.exists():
        shutil.copyfile(shared, db)
    # The run's progress goes to the host as events, drawn on its terminal (lab/events.py).
    # Set for this call only: a caller in the same process (a test, an embedding program)
    # would otherwise send every later run's progress, and its children's, to that file.
    before = os.environ.get(PROGRESS_EVENTS)
    os.environ[PROGRESS_EVENTS] = str(outdir / ".lab" / PROGRESS)
    try:
        return cli_main([*cli_args, "--db", str(db)])
    finally:
        if before is None:
            os.environ.pop(PROGRESS_EVENTS, None)
        else:
            os.environ[PROGRESS_EVENTS] = before
        if db.exists():
            _copy_db(db, shared)
