"""A throwaway PostgreSQL cluster whose data directory lives on the target under test.

The life of a cluster (every step journaled, see journal.py):

1. a private directory in the service workdir (outside the target) holds the server
   log, the facts file and the socket directory (owned by postgres, mode 0700);
2. a data directory on the target, filled by `initdb` run as postgres;
3. `postgres -D DATA` runs as postgres inside the target's blkio cgroup, so the server's
   own I/O (WAL fsyncs, checkpoints, reads) is throttled as the disk class says (proc
   joins the cgroup before dropping to the postgres user). No TCP
   (`listen_addresses=''`): clients reach it only through the private socket directory.
   The one exception is `TcpAccess` (pgbench from other hosts): the server then listens
   on exactly the given addresses, pg_hba.conf lets in exactly the given client addresses
   (trust, one host each, never a network);
4. the stop is SIGQUIT to the postmaster, what `pg_ctl stop -m immediate` sends: a
   shutdown checkpoint is wasted on a cluster about to be deleted. Then the data
   directory and the private directory go.

The postmaster is journaled by PID and start time, and with its data directory, so
`volbench cleanup` removes what a SIGKILLed volbench left: the postmaster itself gets
the kernel's parent-death signal then, but its data directory, its shared memory and any
backend still finishing remain for cleanup.
"""

from __future__ import annotations

import grp
import ipaddress
import json
import os
import pwd
import re
import socket
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.core.errors import ResourceError
from volbench.core.model import digest
from volbench.services import pghba, pgrole, pgsettings
from volbench.services.crashhooks import CrashHooks
from volbench.services.pgstop import kill, stop
from volbench.system import proc, procfs
from volbench.system.block.mounts import make_tree
from volbench.system.host import hostinfo, pgfind
from volbench.system.journal import Entry, Scope
from volbench.system.recipe import Recipe
from volbench.targets.base import Built

PG_USER = "postgres"
READY_TIMEOUT = 120.0
FACTS = "facts.json"
LOG = "postgres.log"
# Settings volbench sets unless the workload spec says otherwise (the defaults of every
# major from 12 to 18, written out so every result records them).
DEFAULT_SETTINGS: dict[str, str] = {"shared_buffers": "128MB", "max_connections": "100"}
# Settings that make the cluster private; the spec may not change them.
# dynamic_shared_memory_type=mmap: the server's dynamic shared memory segments are files
# in its data directory (pg_dynshmem/), which teardown and `volbench cleanup` always
# delete. The default (posix) puts them in /dev/shm, where a SIGKILLed server leaves
# them (2 segments, ~1 MiB, 5 of 5 trials) with nothing naming them as this server's.
# The cost: the kernel writes those pages back to the target now and then (measured in
# docs/safety.md), against nothing left behind.
FIXED = pgsettings.FIXED
# Settings read back from the running server and stored with every run.
RECORDED = ("shared_buffers", "max_connections", "fsync", "synchronous_commit",
            "full_page_writes", "wal_level", "wal_sync_method", "wal_compression",
            "max_wal_size", "checkpoint_timeout", "checkpoint_completion_target",
            "effective_cache_size", "work_mem", "maintenance_work_mem", "autovacuum",
            "effective_io_concurrency", "random_page_cost", "data_checksums", "huge_pages",
            "shared_memory_type", "server_version")
_UNIT_BYTES = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


@dataclass(frozen=True)
class ClusterConfig:
    """postgresql.conf settings of a cluster: the defaults with the user's on top."""

    settings: tuple[tuple[str, str], ...] = tuple(sorted(DEFAULT_SETTINGS.items()))
    # The installation's bin directory (the workload's pg_bin); "" = found by pgfind.
    pg_bin: str = ""

    @property
    def key(self) -> str:
        """Clusters with the same settings and installation are the same service (one per
        target). Without pg_bin the key is the settings' alone, as before pg_bin existed."""
        what: dict[str, str] = dict(self.settings)
        if self.pg_bin:
            what = {**what, "(pg_bin)": self.pg_bin}
        return "postgres-" + digest(what)[:12]

    def as_dict(self) -> dict[str, str]:
        return dict(self.settings)


def make_config(user: Mapping[str, str], pg_bin: str = "") -> ClusterConfig:
    merged = {**DEFAULT_SETTINGS, **user}
    return ClusterConfig(tuple(sorted(merged.items())), pg_bin)


def initdb_args(major: int | None) -> list[str]:
    """initdb's options for a private, disposable cluster, as that major accepts them.

    --no-instructions exists from 14 on (12 and 13 print the start command instead: only
    noise in the log). 18 turns data checksums on by default; left as each major's default
    and recorded (data_checksums), so a cross-version comparison shows it."""
    args = ["-U", PG_USER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]
    if major is None or major >= 14:
        args.append("--no-instructions")
    return args


def find_install(config: ClusterConfig) -> tuple[pgfind.Install, str]:
    """The installation for this cluster and its version (PostgresMissing if none)."""
    install = pgfind.locate(Path(config.pg_bin) if config.pg_bin else None)
    version = pgfind.version(install.program("postgres"))
    found = pgfind.major(version)
    if found is not None and found not in pgfind.SUPPORTED:
        raise ResourceError(
            f"PostgreSQL {version} in {install.bindir} is outside the majors volbench "
            f"supports ({pgfind.SUPPORTED.start}-{pgfind.SUPPORTED.stop - 1}); install one of "
            "those and point pg_bin at its bin directory")
    return install, version


@dataclass(frozen=True)
class TcpAccess:
    """TCP for clients on other hosts: the addresses the server listens on (never a
    wildcard) and the client addresses pg_hba.conf admits (trust, each a single host)."""

    listen: tuple[str, ...]
    clients: tuple[str, ...]

    def hba_lines(self) -> list[str]:
        """pg_hba.conf: the unix socket through the peer map, TCP only from the clients
        (services/pghba.py)."""
        return pghba.hba_lines(self.clients)


def tcp_problem(address: str) -> str | None:
    """Why an address cannot be a listen or client address, or None."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"'{address}' is not an IP address"
    if ip.is_unspecified:
        return f"{address} means every address; give one address of this machine"
    return None


@dataclass(frozen=True)
class Server:
    """A running cluster: where clients reach it and what it is."""

    datadir: Path
    home: Path
    port: int
    pid: int
    bindir: Path
    info: Mapping[str, Any]
    # A power cut's end of the server and its start on what the disks kept.
    crash_hooks: CrashHooks | None = None

    @property
    def sockdir(self) -> Path:
        return self.home / "sock"

    def values(self) -> dict[str, str]:
        """What workloads need to connect (ServiceHandle.values)."""
        return {"host": str(self.sockdir), "port": str(self.port), "user": PG_USER,
                "bench_user": pgrole.BENCH_ROLE,
                "workdir": str(self.home), "facts": str(self.home / FACTS),
                "bindir": str(self.bindir)}


@contextmanager
def cluster(config: ClusterConfig, scope: Scope, built: Built, workdir: Path,
            tcp: TcpAccess | None = None, sandbox_user: str | None = None) -> Iterator[Server]:
    """Create, start and (always) stop and delete a cluster with its data on `built`.

    With `tcp` the server also listens on those addresses for those clients only.
    `sandbox_user`: the system user the run's pgbench runs as (system/sandbox.py): it
    may enter the socket directory and be the benchmark role, nothing more (pghba.py)."""
    if os.geteuid() != 0:
        raise ResourceError("the PostgreSQL server runs as the postgres user, which only "
                            "root can start: run volbench as root")
    if built.path is None:
        raise ResourceError(f"target {built.name} has no filesystem for PostgreSQL's data "
                            "directory; give the target a filesystem (fs: xfs)")
    install, version = find_install(config)
    bindir = install.bindir
    # initdb and the server run as postgres: they must reach their own programs too.
    check_reachable(bindir)
    recipe = Recipe(tracker=scope)
    home = _private_dir(scope, workdir / "postgres", sandbox_user)
    datadir = make_tree(scope, built.path / f"volbench-pgdata-{uuid.uuid4().hex[:8]}")
    _give_to_postgres(datadir)
    check_reachable(datadir)
    recipe.run([str(bindir / "initdb"), "-D", str(datadir),
                *initdb_args(pgfind.major(version))],
               timeout=300, user=PG_USER, cwd=home,
               hint="see the initdb message above; the data directory is on the target")
    _write_access(datadir, tcp, sandbox_user, recipe)
    entry = scope.add("postgres", datadir=str(datadir), home=str(home))
    server: proc.Background | None = None
    running: _Running | None = None
    try:
        server, port = _start([str(bindir / "postgres"), "-D", str(datadir)], config, home,
                              built, scope, entry, recipe, tcp)
        info = _describe(bindir, home, port, config, built)
        info["bench_role"] = pgrole.create_bench_role(bindir / "psql", home / "sock", port,
                                                      PG_USER, recipe)
        info.update(bindir=str(bindir), found_by=install.found_by,
                    pgbench_version=pgfind.version(install.program("pgbench")))
        if tcp is not None:
            info["tcp"] = {"listen_addresses": list(tcp.listen), "port": port,
                           "pg_hba": tcp.hba_lines()[1:]}
        info.update(datadir=str(datadir), port=port, pid=server.pid, recipe=recipe.steps)
        (home / FACTS).write_text(json.dumps(info, indent=1, sort_keys=True))
        running = _Running(server, [str(bindir / "postgres"), "-D", str(datadir),
                                    *_server_args(config, home, port, tcp)],
                           home, built, scope, entry)
        yield Server(datadir, home, port, server.pid, bindir, info,
                     CrashHooks(running.crash, running.start))
    finally:
        try:
            scope.release(entry)
        finally:
            if server is not None:
                _reap(running.server if running is not None else server)


class _Running:
    """The cluster's postmaster as a power cut sees it: killed with every server process
    (SIGKILL: no shutdown, no checkpoint), then started again on the same data directory
    and port, where it runs crash recovery from the WAL the disks kept."""

    def __init__(self, server: proc.Background, argv: list[str], home: Path, built: Built,
                 scope: Scope, entry: Entry) -> None:
        self.server, self.argv, self.home, self.built = server, argv, home, built
        self.scope, self.entry = scope, entry

    def crash(self) -> None:
        kill(self.entry.data)
        _reap(self.server)

    def start(self) -> dict[str, Any]:
        """Start, wait until ready (crash recovery done), answer a query: the facts, or
        ResourceError with the server log's end when it does not come back."""
        started = time.monotonic()
        datadir = Path(self.entry.data["datadir"])
        log = self.home / LOG
        before = log.stat().st_size if log.exists() else 0
        self.server = proc.start(self.argv, log=log, cwd=datadir, cgroup=self.built.cgroup,
                                 user=PG_USER)
        self.scope.update(self.entry, pid=self.server.pid,
                          start=procfs.start_ticks(self.server.pid))
        problem = _wait_ready(self.server, datadir)
        text = log.read_text(errors="replace")[before:] if log.exists() else ""
        if problem is not None:
            raise ResourceError(f"PostgreSQL did not recover after the power cut: {problem}; "
                                "server log: " + " | ".join(text.strip().splitlines()[-6:]))
        ready = time.monotonic() - started
        query = proc.run([str(Path(self.argv[0]).parent / "psql"), "-X", "-At",
                          "-h", str(self.home / "sock"), "-p", _port_of(self.argv), "-U", PG_USER,
                          "-d", "postgres", "-c", "SELECT 1"], timeout=READY_TIMEOUT,
                         check=False)
        if query.returncode != 0:
            raise ResourceError("PostgreSQL started after the power cut but does not answer: "
                                + query.stderr.strip()[-300:])
        return {"ready_s": round(ready, 3), "first_query_s": round(time.monotonic() - started, 3),
                "pid": self.server.pid,
                "recovery_log": [ln for ln in text.splitlines()
                                 if "redo" in ln or "recover" in ln or "checkpoint" in ln][-8:]}


def _port_of(argv: list[str]) -> str:
    """The port among a server's `-c name=value` arguments."""
    for arg in argv:
        if arg.startswith("port="):
            return arg.split("=", 1)[1]
    raise ResourceError("the PostgreSQL command line has no port")


def _private_dir(scope: Scope, path: Path, sandbox_user: str | None = None) -> Path:
    """Log, facts and the socket directory: readable by all, the socket only by postgres
    and (mode 0710, its group) the run's sandbox user."""
    home = make_tree(scope, path)
    home.chmod(0o755)
    sock = home / "sock"
    sock.mkdir(mode=0o700)
    _give_to_postgres(sock)
    if sandbox_user is not None:
        os.chown(sock, -1, pwd.getpwnam(sandbox_user).pw_gid)
        sock.chmod(0o710)
    check_reachable(sock)
    return home


def _give_to_postgres(path: Path) -> None:
    entry = pwd.getpwnam(PG_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)


def check_reachable(path: Path, user: str = PG_USER) -> None:
    """Every directory above `path` must let `user` through, or the server cannot start."""
    entry = pwd.getpwnam(user)
    groups = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    for parent in reversed(path.parents):
        st = parent.stat()
        if st.st_uid == entry.pw_uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid in groups:
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            raise ResourceError(
                f"the {user} user cannot reach {path}: {parent} is "
                f"{stat.filemode(st.st_mode)}; run `chmod o+x {parent}` or put the workdir "
                "and targets below directories other users may enter")


def free_port() -> int:
    """A port number no local server uses.

    With listen_addresses='' the port only names the socket file in the private
    directory (and seeds the shared-memory key, which PostgreSQL probes until free),
    so clusters of parallel runs cannot collide; a port no TCP server holds and no
    system cluster's socket uses keeps `ps`, logs and pg_wrapper unambiguous too.
    """
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not any(Path(d, f".s.PGSQL.{port}").exists()
                   for d in ("/var/run/postgresql", "/tmp")):
            return port
    raise ResourceError("no free port found for PostgreSQL; free some local ports")


def _server_args(config: ClusterConfig, home: Path, port: int, tcp: TcpAccess | None = None
                 ) -> list[str]:
    listen = ",".join(tcp.listen) if tcp is not None else ""
    fixed = {"listen_addresses": listen, "unix_socket_directories": str(home / "sock"),
             "port": str(port), "dynamic_shared_memory_type": "mmap"}
    return [arg for name, value in (*config.settings, *fixed.items())
            for arg in ("-c", f"{name}={value}")]


def _start(argv: list[str], config: ClusterConfig, home: Path, built: Built, scope: Scope,
           entry: Entry, recipe: Recipe, tcp: TcpAccess | None = None
           ) -> tuple[proc.Background, int]:
    datadir = Path(entry.data["datadir"])
    for attempt in (1, 2, 3):
        port = free_port()
        full = [*argv, *_server_args(config, home, port, tcp)]
        scope.update(entry, port=port)
        server = proc.start(full, log=home / LOG, cwd=datadir, cgroup=built.cgroup,
                            user=PG_USER)
        scope.update(entry, pid=server.pid, start=procfs.start_ticks(server.pid))
        problem = _wait_ready(server, datadir)
        if problem is None:
            where = f" in cgroup {built.cgroup}" if built.cgroup else ""
            recipe.note(f"started in the background{where}: {proc.command_line(full)}")
            return server, port
        stop(entry.data)
        _reap(server)
        tail = " | ".join(server.output().strip().splitlines()[-4:])
        if attempt < 3 and ("lock file" in tail or "already in use" in tail):
            continue
        raise ResourceError(f"PostgreSQL did not start on target {built.name}: {problem}; "
                            f"server log: {tail or '(empty)'}")
    raise AssertionError("unreachable")  # pragma: no cover


def _wait_ready(server: proc.Background, datadir: Path) -> str | None:
    """None once postmaster.pid says "ready" (accepting connections), else what went wrong."""
    deadline = time.monotonic() + READY_TIMEOUT
    pidfile = datadir / "postmaster.pid"
    while time.monotonic() < deadline:
        if not server.alive():
            return f"postgres exited with code {server.popen.returncode}"
        try:
            lines = pidfile.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        # Line 8 is the postmaster's status (PostgreSQL >= 10).
        if len(lines) >= 8 and lines[0].strip() == str(server.pid) \
                and lines[7].strip() == "ready":
            return None
        time.sleep(0.05)
    return f"not ready after {READY_TIMEOUT:g} s"


def _describe(bindir: Path, home: Path, port: int, config: ClusterConfig, built: Built
              ) -> dict[str, Any]:
    """The settings the server really runs with, shared_buffers and RAM in bytes."""
    names = sorted({*RECORDED, *config.as_dict()})
    query = ("SELECT name, current_setting(name), setting, coalesce(unit, '') FROM pg_settings"
             " WHERE name IN (" + ", ".join(f"'{n}'" for n in names) + ") ORDER BY name")
    done = proc.run([str(bindir / "psql"), "-X", "-At", "-F", "\t", "-h", str(home / "sock"),
                     "-p", str(port), "-U", PG_USER, "-d", "postgres", "-c", query], timeout=60)
    settings: dict[str, str] = {}
    shared_buffers = 0
    for line in done.stdout.splitlines():
        name, shown, raw, unit = [*line.split("\t"), "", "", ""][:4]
        settings[name] = shown
        if name == "shared_buffers":
            shared_buffers = int(raw) * unit_bytes(unit)
    return {"server_version": settings.get("server_version", ""), "settings": settings,
            "shared_buffers_bytes": shared_buffers, "ram_bytes": hostinfo.memory_bytes(),
            "cgroup": str(built.cgroup) if built.cgroup else None}


def _write_access(datadir: Path, tcp: TcpAccess | None, sandbox_user: str | None,
                  recipe: Recipe) -> None:
    """Replace initdb's pg_hba.conf (which trusts every local user as any role, and
    127.0.0.1 and ::1) and pg_ident.conf with volbench's (services/pghba.py)."""
    for address in (*tcp.listen, *tcp.clients) if tcp is not None else ():
        problem = tcp_problem(address)
        if problem:
            raise ResourceError(f"PostgreSQL cannot use TCP address {address}: {problem}")
    pghba.write(datadir, tcp.clients if tcp is not None else (), sandbox_user, recipe)


def unit_bytes(unit: str) -> int:
    """pg_settings units such as '8kB' or 'MB' as a number of bytes."""
    m = re.match(r"^(\d*)\s*([kMGT]?B)$", unit)
    if not m:
        return 1
    return int(m.group(1) or 1) * _UNIT_BYTES[m.group(2)]


def _reap(server: proc.Background) -> None:
    """Collect our child's exit status (it is already stopped, or is stopped now)."""
    try:
        server.popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.stop()
