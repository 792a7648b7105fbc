"""fio servers on every host of a multi-host target (`fio --server=ip:ADDR,PORT`).

The service the fio workload names: for an ordinary target it yields an empty
handle (fio then runs locally as always); for a `type: hosts` target it starts one
fio server per host, bound to the host's address, and hands the fio client the list
of servers. Servers on this machine (also in a network namespace) join the cgroup of
the target they load, so a disk class's limits apply to their I/O; they are journaled
by PID and start time. Servers on other machines are started and stopped over SSH,
journaled as `remote-process` (pid file + a unique tag), so `volbench cleanup` stops
them after a crash too.

Ports: fio servers set SO_REUSEPORT, so a second server on a taken port starts
without complaint and then *shares* the connections: the client would reach either
one at random. Before starting, volbench therefore checks that nothing answers on the
port and that no server of its own holds it, and moves on to the next port (up to
PORT_TRIES above the host's fio_port) if one does.

The clock offset of every host against this machine is measured once the servers are
up and recorded with every run that used them.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.core.model import Params
from volbench.remote.hosts import HostError, HostSpec
from volbench.remote.session import HostProcess
from volbench.services.keys import FIO_CLIENTS as CLIENTS
from volbench.system.block import devices
from volbench.system.host import tools
from volbench.system.journal import Entry, Scope
from volbench.targets.multihost import MultiBuilt, Placement
from volbench.workloads.base import ServiceContext, ServiceHandle

# The service value fio's command() looks for (JSON: one entry per host).
PORT_TRIES = 16
READY_TIMEOUT = 20.0
# (where the server runs, address, port) of every server this process runs. Global on
# purpose: two multi-host targets may exist at once (interleaved order) with the same
# hosts, and their servers must not share a port (see SO_REUSEPORT above).
_IN_USE: set[tuple[str, str, int]] = set()


def service_key(spec: Any, params: Params) -> str:
    """One set of servers per target, shared by every fio workload and case."""
    return "fio-servers"


def server_arg(address: str, port: int) -> str:
    """fio's server/client address syntax: ip:A,P / ip6:A,P, or a host name fio resolves."""
    try:
        prefix = "ip6:" if ipaddress.ip_address(address).version == 6 else "ip:"
    except ValueError:
        prefix = ""
    return f"{prefix}{address},{port}"


def listening(address: str, port: int, timeout: float = 0.5) -> bool:
    """Does something accept TCP connections there (seen from the fio client's side)?"""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def _slot(host: HostSpec, port: int) -> tuple[str, str, int]:
    where = host.ssh.destination if host.ssh else "local"
    return (f"{where}/{host.netns or ''}", host.address, port)


@dataclass
class Server:
    placement: Placement
    port: int
    process: HostProcess
    # The server's log on this machine, journaled: the service directory must end up
    # empty, also when `volbench cleanup` tidies after a crash.
    scope: Scope
    log: Entry

    @property
    def host(self) -> HostSpec:
        return self.placement.host

    def client_entry(self) -> dict[str, Any]:
        p = self.placement
        return {
            "host": self.host.name,
            "server": server_arg(self.host.address, self.port),
            "address": self.host.address,
            "port": self.port,
            "path": p.path,
            "device": p.block_device,
        }

    def stop(self) -> None:
        try:
            self.process.stop()
        finally:
            _IN_USE.discard(_slot(self.host, self.port))
            self.scope.release(self.log)


def _wait_ready(host: HostSpec, port: int, process: HostProcess) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    checks = 0
    while time.monotonic() < deadline:
        if listening(host.address, port):
            return
        # A local liveness check is free; a remote one is an ssh round trip: less often.
        checks += 1
        if (not host.remote or checks % 10 == 0) and not process.alive():
            tail = " | ".join(process.output().strip().splitlines()[-3:])
            raise HostError(
                host.name,
                f"its fio server on {host.address}:{port} exited at start ({tail or 'no output'})",
                f"check that {host.address} is an address of the host "
                "(ip addr) and that fio is installed there",
            )
        time.sleep(0.1)
    raise HostError(
        host.name,
        f"its fio server did not answer on {host.address}:{port} within {READY_TIMEOUT:g} s",
        "check that a firewall lets this machine reach that port",
    )


def _start_server(placement: Placement, ctx: ServiceContext, built: MultiBuilt) -> Server:
    host = placement.host
    cgroup = built.cgroup or placement.cgroup
    for port in range(host.fio_port, host.fio_port + PORT_TRIES):
        slot = _slot(host, port)
        if slot in _IN_USE or listening(host.address, port):
            continue
        _IN_USE.add(slot)
        log = ctx.workdir / f"fio-server-{host.name}-{port}.log"
        entry = devices.journal_file(ctx.scope, log)
        try:
            process = placement.session.start(
                ["fio", f"--server={server_arg(host.address, port)}"],
                scope=ctx.scope,
                log=log,
                cgroup=cgroup,
            )
            try:
                _wait_ready(host, port, process)
            except BaseException:
                process.stop()
                raise
        except BaseException:
            _IN_USE.discard(slot)
            ctx.scope.release(entry)
            raise
        return Server(placement, port, process, ctx.scope, entry)
    raise HostError(
        host.name,
        f"ports {host.fio_port}-{host.fio_port + PORT_TRIES - 1} on {host.address} are all taken",
        "set another fio_port for the host",
    )


def _info(servers: list[Server], built: MultiBuilt) -> dict[str, Any]:
    hosts: dict[str, Any] = {}
    for server in servers:
        cgroup = built.cgroup or server.placement.cgroup
        hosts[server.host.name] = {
            "server": server_arg(server.host.address, server.port),
            "target": server.placement.target,
            "throttled_by": str(cgroup) if cgroup else None,
            "clock": server.placement.session.clock_offset().as_dict(),
        }
    return {"fio_servers": hosts}


def _stop_all(servers: list[Server]) -> list[str]:
    errors = []
    for server in reversed(servers):
        try:
            server.stop()
        except VolbenchError as exc:
            errors.append(str(exc))
    return errors


@contextmanager
def fio_servers(spec: Any, params: Params, ctx: ServiceContext) -> Iterator[ServiceHandle]:
    """The fio workload's service: servers for a multi-host target, nothing otherwise."""
    built = ctx.built
    if not isinstance(built, MultiBuilt):
        yield ServiceHandle({})
        return
    tools.require("fio")
    servers: list[Server] = []
    failed = True
    try:
        for placement in built.placements:
            servers.append(_start_server(placement, ctx, built))
        handle = ServiceHandle(
            {CLIENTS: json.dumps([s.client_entry() for s in servers])}, _info(servers, built)
        )
        yield handle
        failed = False
    finally:
        errors = _stop_all(servers)
        if errors and not failed:
            raise VolbenchError(
                "fio servers not stopped, run `volbench cleanup`: " + "; ".join(errors)
            )
