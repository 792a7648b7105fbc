"""Tools that need no root run as a user of volbench's own, in a sandbox that can write
only their run directory.

Why: a pgbench script is the user's code (`\\shell`, `\\setshell`), and pgbench's options
and scripts are more than any check on their text can model (the checks missed a
`\\shell` after a `;` and bundled flags such as `-Cf/abs/evil.sql@1`). Checks on text stay,
as early friendly errors; the wall is this sandbox, whatever the text says.

The user: `volbench-XXXXXXXX`, a system account made by `useradd` when a run that needs
it starts, journaled (kind `sandbox-user`) before it exists, and removed by `userdel` when
the run ends, or by `volbench cleanup` after a kill. One per run: no two runs share one,
and nothing else on the machine is that user.

The sandbox (bubblewrap, Debian's `bubblewrap`), started as root inside the run's cgroup:

    bwrap --die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-net
          --unshare-uts --unshare-cgroup-try --ro-bind / / --dev /dev --proc /proc
          --bind RUNDIR RUNDIR --chdir RUNDIR --
      prlimit --nproc=N --
      setpriv --reuid=USER --regid=USER --clear-groups --no-new-privs
              --inh-caps=-all --bounding-set=-all -- TOOL ARGS…

- Every file system is read-only inside (`--ro-bind / /` is recursive, and bwrap makes
  each mount under it read-only); only the run directory is bound writable. The user
  could not write elsewhere anyway (not root, no group), so each wall stands alone.
- A private /dev with null, zero, full, random, urandom, tty only: no disk is reachable.
- Its own PID namespace: it sees and can signal no process outside, and every process it
  starts ends with the sandbox (when bwrap's init exits the kernel ends them all), so
  nothing outlives the command. Its own network namespace: no network at all (the
  throwaway cluster's Unix socket is a file, reached through the file system).
- setpriv drops to the user with no capabilities left in any set, no supplementary
  group and no_new_privs (a setuid program gains nothing). bwrap as root needs no user
  namespaces, which some kernels switch off; the user cannot undo the read-only mounts
  (a mount namespace it makes copies them locked).
- The environment is volbench's, not the caller's: PATH, the C locale, HOME and TMPDIR
  in the run directory (proc.run with `clean_env`); no PGPASSWORD, no VOLBENCH_DB.

What the sandbox does not limit: reading what any user may read (world-readable files),
CPU, memory and the space of the run directory's file system.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.core.errors import ResourceError
from volbench.system import accounts, proc, procfs
from volbench.system.journal import Scope, undoer

KIND = "sandbox-user"
PREFIX = "volbench-"
# Processes (and threads) the user may have at once: pgbench's threads and clients'
# connections are far fewer; a fork bomb in a \shell stops here.
MAX_TASKS = 4096
# useradd/userdel take /etc/passwd's lock; another one at the same moment fails at once.
LOCK_TRIES = 40
PROGRAMS = ("bwrap", "setpriv", "prlimit", "useradd", "userdel")
COMMENT = "volbench sandbox, removed after its run"


@dataclass(frozen=True)
class SandboxUser:
    """The run's own unprivileged user."""

    name: str
    uid: int
    gid: int


def missing() -> str | None:
    """None when sandboxes can be made here, else what is missing and how to get it."""
    if os.geteuid() != 0:
        return "the sandbox user is made by root: run volbench as root"
    lacking = [p for p in PROGRAMS if shutil.which(p) is None]
    if lacking:
        return (f"{', '.join(lacking)} not found: tools run in a bubblewrap sandbox as a "
                "user of volbench's own; install them (Debian: apt-get install bubblewrap "
                "util-linux passwd, or scripts/setup)")
    return None


def create(scope: Scope) -> SandboxUser:
    """Make the run's user (journaled first; removed when `scope` closes)."""
    problem = missing()
    if problem is not None:
        raise ResourceError(problem)
    name = PREFIX + secrets.token_hex(4)
    scope.add(KIND, name=name)
    why = _locked(["useradd", "--system", "--user-group", "--no-create-home",
                   "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                   "--comment", COMMENT, name])
    if why is not None and "/etc/shadow" in why:
        accounts.add(name, COMMENT)  # the lab guest: /etc/shadow is a mount of its own
    elif why is not None:
        raise ResourceError(f"cannot make the sandbox user {name}: {why}; check /etc/passwd "
                            "and run volbench cleanup")
    entry = pwd.getpwnam(name)
    return SandboxUser(name, entry.pw_uid, entry.pw_gid)


def _locked(argv: list[str]) -> str | None:
    """Run useradd/userdel, again while another holds /etc/passwd's lock; None when it
    worked, else what it said."""
    for _ in range(LOCK_TRIES):
        done = proc.run(argv, timeout=60, check=False)
        if done.returncode == 0:
            return None
        if "lock" not in done.stderr:
            break
        time.sleep(0.25)
    return (f"{proc.command_line(argv)} exited {done.returncode} "
            f"({done.stderr.strip() or 'no message'})")


@undoer(KIND)
def _remove(data: Mapping[str, Any]) -> None:
    name = str(data["name"])
    if not name.startswith(PREFIX):  # never anything but a user volbench made
        return
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return  # journaled, never made (or removed already)
    _end_processes(uid)
    why = _locked(["userdel", name])
    if why is not None:  # made without a shadow entry (accounts.py), or userdel refused
        accounts.remove(name)
    try:
        pwd.getpwnam(name)
    except KeyError:
        return
    raise ResourceError(f"cannot remove the sandbox user {name}: {why}; remove it with "
                        f"userdel {name}")


def _end_processes(uid: int) -> None:
    """End what still runs as the user (the run's cgroup normally ended it already)."""
    mine = []
    for pid in procfs.pids():
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            uids = next(line.split()[1:] for line in status.splitlines()
                        if line.startswith("Uid:"))
            st = procfs.stat(pid)
            if str(uid) in uids and st is not None:
                mine.append((pid, st.start))
    if mine:
        procfs.end_processes(mine, grace=1.0)


def argv(box: SandboxUser, command: Sequence[str], *, cwd: Path,
         writable: Sequence[Path] = ()) -> list[str]:
    """`command` as it runs in the sandbox: writable are `cwd` and `writable` only."""
    binds = [a for path in dict.fromkeys((cwd, *writable))
             for a in ("--bind", str(path), str(path))]
    return ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *binds,
            "--chdir", str(cwd), "--",
            "prlimit", f"--nproc={MAX_TASKS}", "--",
            "setpriv", f"--reuid={box.uid}", f"--regid={box.gid}", "--clear-groups",
            "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--",
            *command]


def environment(cwd: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a sandboxed tool sees of the environment: nothing of the caller's."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd), "TMPDIR": str(cwd),
            **(extra or {})}


def describe(box: SandboxUser, cwd: Path, writable: Sequence[Path] = ()) -> dict[str, Any]:
    """What a run's annotations say of its sandbox."""
    return {"user": box.name, "uid": box.uid,
            "writable": [str(p) for p in dict.fromkeys((cwd, *writable))],
            "how": "bwrap: read-only file systems, private /dev, PID, IPC and network "
                   "namespaces; setpriv: no capabilities, no_new_privs"}
