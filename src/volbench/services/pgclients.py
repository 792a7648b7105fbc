"""PostgreSQL for pgbench clients on other hosts (`clients_from:`): the throwaway cluster
of the run's target, reachable over TCP by exactly the client hosts.

Opening the service:

1. every client host is opened (`open_session`: reachable, key accepted, host key
   checked; an SSH master connection carries later commands);
2. the address each host connects to is found: the workload's `listen:` if given,
   otherwise the source address this machine uses towards the host's `address`
   (`ip -j route get ADDRESS` → `prefsrc`): on a veth pair that is this machine's end
   of the pair, towards another machine the address of the interface facing it;
3. the address each host connects *from* is asked on the host the same way
   (`ip -j route get SERVER` there); a host with no route keeps its `address` for
   pg_hba.conf and will fail to connect, which names it in every run;
4. the cluster starts with `listen_addresses` = those server addresses and a
   pg_hba.conf that trusts those client addresses only (services/postgres.py);
   the sockets the postmaster really listens on are read back and must be exactly
   those — never a wildcard;
5. each host's clock offset, environment and pgbench version are recorded.

Setup (`pgbench -i`, CHECKPOINT) still runs on this machine over the private unix
socket; only the measured runs come from the hosts (jobs/multipgbench.py).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volbench.core.errors import ResourceError
from volbench.remote.hosts import HostError, HostSpec, route_source
from volbench.remote.session import Session, open_session
from volbench.services import postgres
from volbench.services.keys import PGBENCH_CLIENTS as CLIENTS
from volbench.system import proc
from volbench.system.host import hostinfo, tools
from volbench.workloads.base import ServiceContext, ServiceHandle

# The service value the pgbench workload reads (JSON: one entry per client host).


def _resolve(address: str, host: str) -> str:
    """An IP address for a host's `address` (which may be a name)."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)[0][4][0])
    except (OSError, IndexError) as exc:
        raise HostError(host, f"cannot resolve {address}", "give an IP address") from exc


def server_address(host: HostSpec, listen: str | None) -> str:
    """Where `host` reaches this machine: `listen:`, or this machine's source address
    towards the host."""
    if listen:
        return listen
    tools.require("ip")
    target = _resolve(host.address, host.name)
    done = proc.run(["ip", "-j", "route", "get", target], timeout=30, check=False)
    source = route_source(done.stdout) if done.returncode == 0 else None
    if source is None:
        raise HostError(
            host.name,
            f"this machine has no route to {target} ({done.stderr.strip() or 'no source'})",
            "give the workload listen: ADDRESS, an address of this machine the host reaches",
        )
    return source


def client_source(session: Session, server: str) -> tuple[str, str]:
    """(the address the host connects from, how it was found)."""
    done = session.run(["ip", "-j", "route", "get", server], check=False, timeout=30)
    source = route_source(done.stdout) if done.returncode == 0 else None
    if source is not None:
        return source, "route"
    why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no route"
    return session.spec.address, f"no route to {server} on the host ({why})"


# -- which sockets the postmaster listens on --------------------------------------------


def proc_net_address(text: str) -> str:
    """/proc/net/tcp{,6} addresses: 32-bit words in host (little-endian) byte order."""
    raw = bytes.fromhex(text)
    ordered = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(ordered))


def tcp_listeners(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket `pid` listens on (in its network namespace)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                cols = row.split()
                # State 0A is LISTEN; column 9 is the socket's inode.
                if len(cols) > 9 and cols[3] == "0A" and cols[9] in inodes:
                    address, port = cols[1].split(":")
                    found.add((proc_net_address(address), int(port, 16)))
    return found


def check_listeners(pid: int, port: int, listen: Sequence[str]) -> list[str]:
    """The server must listen on the configured addresses and nowhere else."""
    seen = tcp_listeners(pid)
    wanted = {(str(ipaddress.ip_address(a)), port) for a in listen}
    if seen != wanted:
        shown = ", ".join(sorted(f"{a}:{p}" for a, p in seen)) or "nothing"
        raise ResourceError(
            f"PostgreSQL listens on {shown}, expected exactly "
            + ", ".join(sorted(f"{a}:{p}" for a, p in wanted))
            + "; check that every listen address belongs to this machine (ip addr)"
        )
    return sorted(f"{a}:{p}" for a, p in seen)


# -- the service ------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    server: str  # where the host connects to
    source: str  # where it connects from (admitted by pg_hba.conf)
    found: str  # "route", or why the host's own address was used


def _unique(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _host_facts(session: Session, route: Route, port: int) -> dict[str, Any]:
    env = hostinfo.parse_probe(session.run(hostinfo.REMOTE_PROBE, timeout=60).stdout)
    version = session.run(["pgbench", "--version"], check=False, timeout=30)
    if version.returncode != 0:
        raise HostError(
            session.name,
            f"pgbench does not run there ({version.stderr.strip() or 'no output'})",
            "install it on the host (Debian: apt-get install postgresql)",
        )
    env["tools"] = {"pgbench": version.stdout.strip()}
    return {
        "reached": session.spec.describe(),
        "server": f"{route.server}:{port}",
        "source": route.source,
        "source_found": route.found,
        "clock": session.clock_offset().as_dict(),
        "environment": env,
    }


def _entry(session: Session, route: Route, facts: dict[str, Any]) -> dict[str, Any]:
    """What the workload needs to run pgbench on the host (jobs/multipgbench.py)."""
    return {
        "name": session.name,
        "host": session.spec.to_json(),
        "control": session.control,
        "server": route.server,
        "clock": facts["clock"],
    }


@contextmanager
def pgbench_clients(
    config: postgres.ClusterConfig,
    hosts: Sequence[HostSpec],
    listen: str | None,
    ctx: ServiceContext,
) -> Iterator[ServiceHandle]:
    """The cluster on the target, listening for `hosts` only; values for the workload."""
    with ExitStack() as stack:
        sessions = [stack.enter_context(open_session(h, ctx.scope)) for h in hosts]
        routes = []
        for session in sessions:
            address = server_address(session.spec, listen)
            routes.append(Route(address, *client_source(session, address)))
        tcp = postgres.TcpAccess(
            _unique([r.server for r in routes]), _unique([r.source for r in routes])
        )
        server = stack.enter_context(
            postgres.cluster(config, ctx.scope, ctx.built, ctx.workdir, tcp=tcp,
                             sandbox_user=ctx.sandbox_user)
        )
        listening = check_listeners(server.pid, server.port, tcp.listen)
        facts = {
            s.name: _host_facts(s, r, server.port) for s, r in zip(sessions, routes, strict=True)
        }
        entries = [_entry(s, r, facts[s.name]) for s, r in zip(sessions, routes, strict=True)]
        info = dict(server.info)
        info["tcp"] = {**info.get("tcp", {}), "listening": listening}
        info["pgbench_clients"] = facts
        values = {**server.values(), CLIENTS: json.dumps(entries)}
        yield ServiceHandle(values, info)


__all__ = ["CLIENTS", "pgbench_clients", "route_source", "tcp_listeners"]
