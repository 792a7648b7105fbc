"""Running commands on a load host: directly, in a network namespace, or over SSH.

Every command still goes through `volbench.system.proc` on this machine; a host only
changes the argv (`ip netns exec NS …`, `ssh … -- 'quoted command'`). SSH runs with
BatchMode (never a password prompt), public keys only, and the host key checked
against known_hosts (StrictHostKeyChecking=yes unless the host says accept-new; a
*changed* key is refused either way). One master connection per host
(ControlMaster) carries the later commands: faster, and short enough round trips to
measure clock offsets to a few milliseconds.

A host can run a command to completion (`run`) and start a background process
(`start`): local ones are children of volbench, journaled by PID and start time;
remote ones are tagged with a unique environment variable and a pid file, journaled
as `remote-process`, and stopped over SSH by that tag (so also by `volbench cleanup`).
"""

from __future__ import annotations

import shlex
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from volbench.remote.hosts import HostError, HostSpec, SSHSettings
from volbench.system import proc, procfs
from volbench.system.block.mounts import make_tree
from volbench.system.host import tools
from volbench.system.journal import Entry, Scope, undoer

SSH_EXIT = 255  # ssh's own failures (connection, authentication, host key)
RUN_TIMEOUT = 60.0

# Remote scripts get their arguments as $1…, never spliced into the text.
_START = (
    "pidfile=$1; log=$2; tag=$3; shift 3; "
    'VOLBENCH_TAG=$tag setsid "$@" >"$log" 2>&1 </dev/null & echo $! >"$pidfile"'
)
# Every process carrying the tag (the started one and anything it forked): TERM for up
# to procfs.TERM_GRACE seconds, then KILL for up to procfs.KILL_WAIT (the same policy as
# procfs.escalate, in shell: the remote host need not have volbench). Tagging beats PID
# + start time here: it survives PID reuse and finds children that left the process group.
_SHELL_POLL = 0.5
_STOP_SIGNALS = " ".join(["TERM"] * round(procfs.TERM_GRACE / _SHELL_POLL)
                         + ["KILL"] * round(procfs.KILL_WAIT / _SHELL_POLL))
_STOP = (
    "pidfile=$1; log=$2; tag=$3; "
    "tagged() { for p in /proc/[0-9]*; do "
    'grep -qxzF "VOLBENCH_TAG=$tag" "$p/environ" 2>/dev/null && echo "${p#/proc/}"; '
    "done; }; "
    f"for sig in {_STOP_SIGNALS}; do "
    'pids=$(tagged); [ -z "$pids" ] && break; kill -s $sig $pids 2>/dev/null; '
    f"sleep {_SHELL_POLL}; "
    'done; pids=$(tagged); rm -f "$pidfile" "$log"; '
    '[ -z "$pids" ] || { echo "still running: $pids" >&2; exit 1; }'
)
_ALIVE = 'pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null'


def ssh_options(ssh: SSHSettings, control: str | None = None) -> list[str]:
    """ssh's options for a host: keys only, no prompts, host keys checked."""
    opts = [
        "-o",
        "BatchMode=yes",
        "-o",
        f"StrictHostKeyChecking={'yes' if ssh.host_key == 'strict' else 'accept-new'}",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "KbdInteractiveAuthentication=no",
        "-o",
        "PreferredAuthentications=publickey",
        "-o",
        f"ConnectTimeout={ssh.connect_timeout}",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
        "-p",
        str(ssh.port),
        "-l",
        ssh.user,
    ]
    if ssh.known_hosts:
        opts += ["-o", f"UserKnownHostsFile={ssh.known_hosts}"]
    if ssh.key:
        opts += ["-i", ssh.key, "-o", "IdentitiesOnly=yes"]
    if control and Path(control).exists():
        opts += ["-o", f"ControlPath={control}", "-o", "ControlMaster=no"]
    return opts


def remote_argv(spec: HostSpec, argv: Sequence[str], control: str | None = None) -> list[str]:
    """The local argv that runs `argv` on the host."""
    argv = [str(a) for a in argv]
    if spec.netns:
        argv = ["ip", "netns", "exec", spec.netns, *argv]
    if spec.ssh is None:
        return argv
    # ssh hands the remote shell one string: quote every word.
    return ["ssh", *ssh_options(spec.ssh, control), "--", spec.ssh.address, shlex.join(argv)]


def ssh_problem(spec: HostSpec, stderr: str) -> HostError:
    """ssh's own failure (exit 255), said plainly, with the fix."""
    assert spec.ssh is not None
    ssh = spec.ssh
    where = f"{ssh.destination} port {ssh.port}"
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("@")]
    detail = lines[-1].strip() if lines else "ssh failed without a message"
    known = ssh.known_hosts or "~/.ssh/known_hosts"
    if "Permission denied" in stderr:
        key = ssh.key or "ssh's default key"
        return HostError(
            spec.name,
            f"SSH refused the key {key} for {where} ({detail})",
            f"add {key}.pub to ~{ssh.user}/.ssh/authorized_keys on the host",
        )
    if "HOST IDENTIFICATION HAS CHANGED" in stderr or "has changed" in stderr:
        return HostError(
            spec.name,
            f"the SSH host key of {where} differs from the one in "
            f"{known}: refused (someone may be intercepting the connection)",
            "if the host was reinstalled, check its new fingerprint and replace "
            f"the line: ssh-keygen -f {known} -R {ssh.address}",
        )
    if "Host key verification failed" in stderr:
        return HostError(
            spec.name,
            f"the SSH host key of {where} is not in {known}: refused",
            f"add it after checking its fingerprint: ssh-keyscan -p {ssh.port} "
            f"{ssh.address} >> {known} (or set ssh.host_key: accept-new)",
        )
    reachability = (
        "Connection refused",
        "timed out",
        "No route to host",
        "unreachable",
        "Could not resolve",
        "Connection closed",
        "Connection reset",
    )
    if any(word in stderr for word in reachability):
        return HostError(
            spec.name,
            f"not reachable over SSH at {where} ({detail})",
            "check the address and port, and that sshd runs there",
        )
    return HostError(spec.name, f"ssh to {where} failed: {detail}")


class HostProcess(Protocol):
    """A background process on a host (a fio server, later pgbench clients)."""

    def alive(self) -> bool: ...
    def output(self) -> str: ...
    def stop(self) -> None: ...


@dataclass
class LocalProcess:
    background: proc.Background

    def alive(self) -> bool:
        return self.background.alive()

    def output(self) -> str:
        return self.background.output()

    def stop(self) -> None:
        self.background.stop()


@dataclass
class RemoteProcess:
    session: Session
    scope: Scope
    entry: Entry

    def alive(self) -> bool:
        done = self.session.run(["sh", "-c", _ALIVE, "sh", self.entry.data["pidfile"]], check=False)
        return done.returncode == 0

    def output(self) -> str:
        done = self.session.run(["cat", self.entry.data["log"]], check=False)
        return done.stdout

    def stop(self) -> None:
        self.scope.release(self.entry)


@dataclass(frozen=True)
class ClockOffset:
    """Host clock minus this machine's clock, from the sample with the shortest round trip."""

    offset_s: float
    # Half that round trip: the true offset lies within offset ± uncertainty.
    uncertainty_s: float
    samples: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "offset_s": round(self.offset_s, 6),
            "uncertainty_s": round(self.uncertainty_s, 6),
            "samples": self.samples,
        }


class Session:
    """A host that is ready to take commands (its SSH master connection open, if any)."""

    def __init__(self, spec: HostSpec, control: str | None = None) -> None:
        self.spec = spec
        self.control = control

    @property
    def name(self) -> str:
        return self.spec.name

    def argv(self, argv: Sequence[str]) -> list[str]:
        return remote_argv(self.spec, argv, self.control)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = RUN_TIMEOUT,
        check: bool = True,
        input: str | None = None,
    ) -> proc.Completed:
        """Run to completion. ssh's own failures raise HostError; with `check`, so does
        a non-zero exit of the command."""
        full = self.argv(argv)
        try:
            done = proc.run(full, timeout=timeout, check=False, input=input)
        except OSError as exc:
            raise HostError(self.name, f"cannot run {full[0]}: {exc.strerror}") from exc
        if done.timed_out:
            raise HostError(
                self.name,
                f"{shlex.join(argv)} did not finish within {timeout:g} s",
                "check that the host is up and not overloaded",
            )
        if self.spec.ssh is not None and done.returncode == SSH_EXIT:
            raise ssh_problem(self.spec, done.stderr)
        if check and done.returncode != 0:
            tail = " | ".join(line for line in done.stderr.strip().splitlines()[-2:])
            raise HostError(
                self.name,
                f"{shlex.join(argv)} failed with exit code "
                f"{done.returncode}" + (f": {tail}" if tail else ""),
            )
        return done

    def start(
        self, argv: Sequence[str], *, scope: Scope, log: Path, cgroup: Path | None = None
    ) -> HostProcess:
        """Start a background process; it is journaled in `scope` and stopped with it.

        `log` is a local path for hosts on this machine; remote processes log to a file
        in the remote /tmp (read with `output()`). `cgroup` (throttling) applies only on
        this machine."""
        if self.spec.ssh is None:
            full = self.argv(argv)
            return LocalProcess(proc.start(full, log=log, cgroup=cgroup, tracker=scope))
        if cgroup is not None:
            raise HostError(
                self.name,
                "a throttled target cannot be used from another machine",
                "remove limits: or use a host on this machine",
            )
        tag = uuid.uuid4().hex
        pidfile, rlog = f"/tmp/volbench-{tag[:12]}.pid", f"/tmp/volbench-{tag[:12]}.log"
        entry = scope.add(
            "remote-process",
            host=self.spec.to_json(),
            control=self.control,
            pidfile=pidfile,
            log=rlog,
            tag=tag,
            argv=list(argv)[:4],
        )
        self.run(["sh", "-c", _START, "sh", pidfile, rlog, tag, *argv])
        return RemoteProcess(self, scope, entry)

    def clock_offset(self, samples: int = 5) -> ClockOffset:
        """NTP-style: read the host clock between two local readings, keep the tightest."""
        best: tuple[float, float] | None = None
        for _ in range(samples):
            t0 = time.time()
            done = self.run(["date", "+%s.%N"], timeout=30)
            t1 = time.time()
            try:
                remote = float(done.stdout.strip())
            except ValueError as exc:
                raise HostError(
                    self.name,
                    f"`date +%s.%N` printed {done.stdout.strip()!r}, not a time",
                    "the host needs GNU date (coreutils)",
                ) from exc
            sample = (remote - (t0 + t1) / 2, (t1 - t0) / 2)
            if best is None or sample[1] < best[1]:
                best = sample
        assert best is not None
        return ClockOffset(best[0], best[1], samples)


@undoer("remote-process")
def _undo_remote_process(data: Mapping[str, Any]) -> None:
    spec = HostSpec.from_json(data["host"])
    Session(spec, data.get("control")).run(
        ["sh", "-c", _STOP, "sh", data["pidfile"], data["log"], data["tag"]], timeout=60
    )


def _start_master(spec: HostSpec, scope: Scope) -> tuple[str | None, proc.Background]:
    """One multiplexed SSH connection for the host's later commands (no control path if
    it fails: then every command opens its own connection, which works, only slower)."""
    assert spec.ssh is not None
    # Unix socket paths are short (108 bytes): a private directory in /tmp, not the workdir.
    private = make_tree(scope, Path(tempfile.gettempdir()) / f"vbssh-{uuid.uuid4().hex[:10]}")
    control = str(private / "master.sock")
    argv = [
        "ssh",
        *ssh_options(spec.ssh),
        "-o",
        "ControlMaster=yes",
        "-o",
        f"ControlPath={control}",
        "-o",
        "ControlPersist=no",
        "-N",
        "--",
        spec.ssh.address,
    ]
    master = proc.start(argv, log=private / "master.log", tracker=scope)
    deadline = time.monotonic() + spec.ssh.connect_timeout + 5
    while time.monotonic() < deadline and master.alive():
        if Path(control).exists():
            return control, master
        time.sleep(0.05)
    return None, master


@contextmanager
def open_session(spec: HostSpec, scope: Scope) -> Iterator[Session]:
    """A host ready for commands: reachable, key accepted, host key checked.

    Raises HostError naming the host when it is not."""
    if spec.ssh is None:
        if spec.netns:
            tools.require("ip")
        session = Session(spec)
        session.run(["true"], timeout=30)
        yield session
        return
    tools.require("ssh")
    Session(spec).run(["true"], timeout=spec.ssh.connect_timeout + 30)
    control, master = _start_master(spec, scope)
    try:
        yield Session(spec, control)
    finally:
        master.stop()


# Here, not in targets/multihost.py: the multi-host pgbench driver (a job process of its own)
# journals remote trees too, and must be able to remove them.
@undoer("remote-tree")
def _undo_remote_tree(data: Mapping[str, Any]) -> None:
    # Only ever a directory volbench named itself (…/.volbench-<random>), never `dir:`.
    path = str(data["path"])
    if "/.volbench-" not in path:
        raise ValueError(f"refusing to remove {path}: not a volbench directory")
    Session(HostSpec.from_json(data["host"]), data.get("control")).run(
        ["rm", "-rf", "--one-file-system", "--", path], timeout=300
    )
