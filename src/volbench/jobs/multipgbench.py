"""pgbench on several client hosts at once, as the one process of a measured run.

    python -m volbench.jobs.multipgbench SPEC.json

SPEC.json (written by workloads/pgbench_hosts.py):

    {"rundir": DIR, "out": FILE, "timeout": SECONDS,
     "prepare": [[psql …], …],        # run here first, in order (VACUUM, TRUNCATE)
     "count": [psql …] | null,        # run here last; its output is recorded
     "hosts": [{"name", "host": HostSpec JSON, "control": ssh control path | null,
                "argv": [pgbench …], "log_prefix", "upload": [local files], "clock"}]}

Steps: the prepare commands; then every host is made ready (a host on another machine
gets a private directory in its /tmp, with the script files the argv names); then
all hosts wait at a barrier and start pgbench together, each in its own thread
through volbench.system.proc (netns: `ip netns exec`, SSH: the session's ssh argv over
its master connection); each has the timeout from the spec. Then the logs of remote
hosts are copied here, and the count command runs.

The output FILE holds, per host: argv, exit code, timed_out, stdout, stderr, start and
end (this machine's clock), the names of its log files in DIR, and `error` when the
host could not even start (ssh refused, …). The exit code is 0 whenever FILE was
written, however the hosts fared: the parser decides what a host's outcome means.

Everything is journaled in the driver's own journal: local pgbench processes by PID,
remote ones as `remote-process` (a unique VOLBENCH_TAG in their environment), remote
directories as `remote-tree`, so `volbench cleanup` finds them if the driver is killed.
SIGTERM (the runner's timeout) tears down through the same journal.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.remote.hosts import HostSpec
from volbench.remote.session import SSH_EXIT, Session, ssh_problem
from volbench.system import journal, proc
from volbench.system.journal import Entry, Scope

PREPARE_TIMEOUT = 600.0
# Remote: run the command inside the host's private directory, so its logs land there.
_IN_DIR = 'cd "$1" && shift && exec "$@"'
# Remote: every file of a prefix, each after a marker line naming it.
_FETCH = (
    'cd "$1" || exit 1; for f in "$2".*; do [ -e "$f" ] || continue; '
    'printf "%s %s\\n" "$3" "$f"; cat -- "$f"; done'
)


class Stopped(BaseException):
    """SIGTERM/SIGINT/SIGHUP: unwind so that the journal's scope tears down."""


class _Locked:
    """A process tracker for several threads at once (the journal file is shared)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.lock = threading.Lock()

    def process_started(self, pid: int, argv: Sequence[str]) -> object:
        with self.lock:
            return self.scope.process_started(pid, argv)

    def process_ended(self, token: object) -> None:
        with self.lock:
            self.scope.process_ended(token)


def split_fetched(text: str, marker: str) -> dict[str, str]:
    """The files _FETCH printed: name -> content."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if line.startswith(marker + " "):
            current = files.setdefault(line[len(marker) + 1 :].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "".join(lines) for name, lines in files.items()}


class Client:
    """One host's pgbench: made ready, started at the barrier, its logs collected."""

    def __init__(self, entry: Mapping[str, Any], rundir: Path, scope: Scope) -> None:
        self.name = str(entry["name"])
        self.session = Session(HostSpec.from_json(entry["host"]), entry.get("control"))
        self.argv = [str(a) for a in entry["argv"]]
        self.prefix = str(entry["log_prefix"])
        self.upload = [str(p) for p in entry.get("upload", [])]
        self.clock = entry.get("clock") or {}
        self.rundir, self.scope = rundir, scope
        self.remote_dir: str | None = None
        self.entries: list[Entry] = []
        self.result: dict[str, Any] = {
            "name": self.name,
            "argv": self.argv,
            "exit_code": None,
            "timed_out": False,
            "stdout": "",
            "stderr": "",
            "logs": [],
            "error": "",
            "clock": self.clock,
        }

    @property
    def remote(self) -> bool:
        return self.session.spec.remote

    def prepare(self) -> list[str]:
        """The full local argv, ready to start (remote: directory made, files copied)."""
        if not self.remote:
            return self.session.argv(self.argv)
        spec = self.session.spec
        self.remote_dir = f"/tmp/.volbench-pgbench-{uuid.uuid4().hex[:12]}"
        self.entries.append(
            self.scope.add(
                "remote-tree",
                host=spec.to_json(),
                control=self.session.control,
                path=self.remote_dir,
            )
        )
        self.session.run(["mkdir", "-m", "700", "--", self.remote_dir])
        argv = list(self.argv)
        for local in self.upload:
            there = f"{self.remote_dir}/{Path(local).name}"
            self.session.run(["sh", "-c", 'cat > "$1"', "sh", there], input=Path(local).read_text())
            argv = [
                a.replace(local, there) if a == local or a.startswith(local + "@") else a
                for a in argv
            ]
        self.result["argv"] = argv
        tag = uuid.uuid4().hex
        self.entries.append(
            self.scope.add(
                "remote-process",
                host=spec.to_json(),
                control=self.session.control,
                pidfile=f"{self.remote_dir}/pid",
                log=f"{self.remote_dir}/log",
                tag=tag,
                argv=argv[:4],
            )
        )
        return self.session.argv(
            ["env", f"VOLBENCH_TAG={tag}", "sh", "-c", _IN_DIR, "sh", self.remote_dir, *argv]
        )

    def run(
        self, argv: list[str], barrier: threading.Barrier, timeout: float, tracker: _Locked
    ) -> None:
        """In a thread: wait for the others, then run to completion."""
        try:
            barrier.wait(timeout=PREPARE_TIMEOUT)
            done = proc.run(argv, timeout=timeout, cwd=self.rundir, check=False, tracker=tracker)
        except (VolbenchError, OSError, threading.BrokenBarrierError) as exc:
            self.result["error"] = f"pgbench could not be started: {exc}"
            return
        self.result.update(
            exit_code=done.returncode,
            timed_out=done.timed_out,
            stdout=done.stdout,
            stderr=done.stderr,
            started=done.started,
            ended=done.ended,
        )
        if self.remote and done.returncode == SSH_EXIT:
            self.result["error"] = str(ssh_problem(self.session.spec, done.stderr))

    def collect(self) -> None:
        """The host's log files into the run directory; the remote side removed."""
        if self.remote_dir is not None:
            marker = f"@@volbench-{uuid.uuid4().hex}@@"
            done = self.session.run(
                ["sh", "-c", _FETCH, "sh", self.remote_dir, self.prefix, marker],
                check=False,
                timeout=PREPARE_TIMEOUT,
            )
            for name, text in split_fetched(done.stdout, marker).items():
                if name.startswith(self.prefix + ".") and "/" not in name:
                    (self.rundir / name).write_text(text)
            for entry in reversed(self.entries):
                self.scope.release(entry)
            self.entries.clear()
        self.result["logs"] = sorted(p.name for p in self.rundir.glob(self.prefix + ".*"))


def _local(argv: Sequence[str], scope: Scope, check: bool = True) -> proc.Completed:
    return proc.run(list(argv), timeout=PREPARE_TIMEOUT, tracker=scope, check=check)


def _wait(threads: Sequence[threading.Thread]) -> None:
    # Short joins keep the main thread responsive to signals.
    for thread in threads:
        while thread.is_alive():
            thread.join(0.2)


def run(spec: Mapping[str, Any], scope: Scope) -> dict[str, Any]:
    rundir = Path(spec["rundir"])
    for argv in spec.get("prepare") or []:
        _local(argv, scope)
    clients = [Client(entry, rundir, scope) for entry in spec["hosts"]]
    ready: list[tuple[Client, list[str]]] = []
    for client in clients:
        try:
            ready.append((client, client.prepare()))
        except (VolbenchError, OSError) as exc:
            client.result["error"] = f"host not ready: {exc}"
    barrier = threading.Barrier(max(1, len(ready)))
    tracker = _Locked(scope)
    timeout = float(spec["timeout"])
    threads = [
        threading.Thread(
            target=c.run,
            args=(argv, barrier, timeout, tracker),
            name=f"pgbench-{c.name}",
            daemon=True,
        )
        for c, argv in ready
    ]
    for thread in threads:
        thread.start()
    _wait(threads)
    for client in clients:
        client.collect()
    result: dict[str, Any] = {"hosts": [c.result for c in clients], "count_output": None}
    if spec.get("count"):
        done = _local(spec["count"], scope, check=False)
        result["count_output"] = done.stdout if done.returncode == 0 else None
    starts = [c.result["started"] for c in clients if "started" in c.result]
    result["start_spread_s"] = max(starts) - min(starts) if starts else None
    return result


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m volbench.jobs.multipgbench SPEC.json", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    try:
        spec = json.loads(Path(args[0]).read_text())
        started = time.time()
        with journal.opened("multipgbench") as jrnl:
            scope = jrnl.scope()
            try:
                result = run(spec, scope)
            finally:
                errors = scope.close()
        result["elapsed_s"] = time.time() - started
        if errors:
            result["teardown_errors"] = errors
        Path(spec["out"]).write_text(json.dumps(result, indent=1) + "\n")
    except (VolbenchError, OSError, ValueError, KeyError) as exc:
        print(f"multipgbench: {exc}", file=sys.stderr)
        return 1
    except Stopped as exc:
        print(f"multipgbench: stopped by {exc}", file=sys.stderr)
        return 1
    for host in result["hosts"]:
        if host["error"] or host["exit_code"] != 0:
            print(
                f"multipgbench: host {host['name']}: exit code {host['exit_code']} "
                f"{host['error']}".rstrip(),
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
