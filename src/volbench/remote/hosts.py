"""Load hosts: the `hosts:` section of an experiment file.

A host is where a load generator (a fio server) runs. Three ways to reach one:

- this machine (`local`, or an entry without `netns:`/`ssh:`): commands run directly;
- a network namespace on this machine (`netns: NAME`): commands run through
  `ip netns exec NAME`, so the host has its own addresses (the project's test hosts,
  or clients of an NFS server in the lab VM);
- another machine over SSH (`ssh: {user, key, …}`): keys only, host keys checked
  against known_hosts by default. `ssh:` and `netns:` together mean a namespace on
  that machine.

`address` is where the host's fio server listens and where the fio client (on this
machine) connects. Shape:

    hosts:
      - local
      - {name: load1, netns: vb1, address: 10.213.1.2}
      - name: far
        address: 198.51.100.7
        ssh: {user: bench, key: ~/.ssh/volbench_ed25519, known_hosts: ~/.ssh/known_hosts}
        dir: /srv/volbench      # stands in for a local target on that machine
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from volbench.config import fieldrules
from volbench.config.fields import Reader
from volbench.config.sections import Section, Value, object_schema
from volbench.config.spec import Field, Integer, Text
from volbench.core.errors import VolbenchError

DEFAULT_FIO_PORT = 8765
HOST_KEY_POLICIES = ("strict", "accept-new")
NETNS_DIR = Path("/run/netns")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")
_NETNS = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]*\$?$")

SSH_USER = Text("user", help="the user volbench logs in as")
SSH_ADDRESS = Text("address", None, help="where ssh connects (default: the host's address)")
SSH_PORT = Integer("port", 22, minimum=1, maximum=65535, help="ssh's port")
SSH_KEY = Text("key", "", help="the private key file volbench logs in with")
KNOWN_HOSTS = Text("known_hosts", "", help="a known_hosts file holding the host's key")
HOST_KEY = Text("host_key", "strict", choices=HOST_KEY_POLICIES,
                help="strict: the key must be known; accept-new: learn it the first time")
CONNECT_TIMEOUT = Integer("connect_timeout", 10, minimum=1, maximum=600,
                          help="seconds ssh waits for the connection")
SSH = Section("ssh", None, help="reach the host over SSH", fields=(
    SSH_USER, SSH_ADDRESS, SSH_PORT, SSH_KEY, KNOWN_HOSTS, HOST_KEY, CONNECT_TIMEOUT))
HOST_NAME = Text("name", help="the host's name, as targets and clients_from give it")
NETNS = Text("netns", "", help="a network namespace on this machine the host lives in")
ADDRESS = Text("address", "127.0.0.1", help="the address its fio server listens on")
DIR = Text("dir", "", help="an absolute directory on the host for its files")
FIO_PORT = Integer("fio_port", DEFAULT_FIO_PORT, minimum=1, maximum=65535,
                   help="the first port tried for the host's fio server")
HOST_FIELDS: tuple[Field[Any], ...] = (HOST_NAME, NETNS, ADDRESS, SSH, DIR, FIO_PORT)
HOSTS = Value("hosts", None, help="load hosts: local, or {name, address, netns, ssh …} "
              "(docs/multihost.md)",
              value={"type": "array", "items": {"anyOf": [{"const": "local"},
                                                          object_schema(HOST_FIELDS)]}})


def valid_netns(name: str) -> bool:
    """A name `ip netns add` accepts (and that cannot climb out of /run/netns)."""
    return bool(_NETNS.match(name)) and name not in (".", "..")


def route_source(text: str) -> str | None:
    """The source address in `ip -j route get ADDRESS` output (`prefsrc`), if any."""
    try:
        routes = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(routes, list):
        return None
    for route in routes:
        if isinstance(route, dict) and route.get("prefsrc"):
            return str(route["prefsrc"])
    return None


class HostError(VolbenchError):
    """Something went wrong on (or on the way to) one load host; the message names it."""

    def __init__(self, host: str, message: str, fix: str = "") -> None:
        self.host = host
        super().__init__(f"host {host}: {message}" + (f"; {fix}" if fix else ""))


@dataclass(frozen=True)
class SSHSettings:
    user: str
    # Where ssh connects (defaults to the host's address).
    address: str
    port: int = 22
    key: str | None = None
    known_hosts: str | None = None
    # strict: the host key must already be known; accept-new: learn unknown keys.
    # Neither accepts a *changed* key.
    host_key: str = "strict"
    connect_timeout: int = 10

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.address}"


@dataclass(frozen=True)
class HostSpec:
    name: str
    address: str = "127.0.0.1"
    netns: str | None = None
    ssh: SSHSettings | None = None
    # A directory on the host standing in for a local target (needed on other machines).
    dir: str | None = None
    # First port tried for the host's fio server (the next free one is used if taken).
    fio_port: int = DEFAULT_FIO_PORT

    @property
    def remote(self) -> bool:
        """Does the host run on another machine (so local paths mean nothing there)?"""
        return self.ssh is not None

    def describe(self) -> str:
        via = []
        if self.ssh is not None:
            via.append(f"ssh {self.ssh.destination}:{self.ssh.port}")
        if self.netns:
            via.append(f"netns {self.netns}")
        return f"{self.name} ({', '.join(via) or 'this machine'}, {self.address})"

    def to_json(self) -> dict[str, Any]:
        """Everything needed to reach the host again (kept in journals for cleanup)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostSpec:
        ssh = data.get("ssh")
        return cls(**{**data, "ssh": SSHSettings(**ssh) if ssh else None})


def valid_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return bool(_HOSTNAME.match(value)) and len(value) <= 253


def _expand(path: str) -> str:
    return str(Path(path).expanduser())


def _ssh(r: Reader, address: str) -> SSHSettings:
    user = r.get(SSH_USER)
    if user and not _USER.match(user):
        r.problem("user", f"'{user}' is not a valid user name")
    key = r.get(SSH_KEY) or None
    if key is not None:
        key = _expand(key)
        if not Path(key).is_file():
            r.problem(
                "key",
                f"key file {key} does not exist",
                "give the private key volbench should log in with "
                "(ssh-keygen -t ed25519 makes one)",
            )
    known = r.get(KNOWN_HOSTS) or None
    if known is not None:
        known = _expand(known)
        if not Path(known).is_file():
            r.problem(
                "known_hosts",
                f"{known} does not exist",
                f"create it with: ssh-keyscan {address} >> {known} (and check the key's "
                "fingerprint), or set host_key: accept-new",
            )
    settings = SSHSettings(
        user=user,
        address=r.get(SSH_ADDRESS.defaulting(address)),
        port=r.get(SSH_PORT),
        key=key,
        known_hosts=known,
        host_key=r.get(HOST_KEY),
        connect_timeout=r.get(CONNECT_TIMEOUT),
    )
    if not valid_address(settings.address):
        r.problem("address", f"'{settings.address}' is not an IP address or host name")
    r.finish()
    return settings


def _host(r: Reader) -> HostSpec:
    name = r.get(HOST_NAME)
    netns = r.get(NETNS) or None
    has_ssh = r.has("ssh")
    if (netns or has_ssh) and not r.has("address"):
        r.problem(
            "address",
            "is required for a host in a namespace or over SSH",
            "give the address its fio server should listen on, e.g. 10.213.1.2",
        )
    address = r.get(ADDRESS)
    if address and not valid_address(address):
        r.problem("address", f"'{address}' is not an IP address or host name")
    ssh = _ssh(r.get(SSH), address) if has_ssh else None
    if netns is not None:
        if not valid_netns(netns):
            r.problem("netns", f"'{netns}' is not a valid namespace name")
        elif ssh is None and not (NETNS_DIR / netns).exists():
            r.problem(
                "netns",
                f"network namespace '{netns}' does not exist",
                f"create it first (ip netns add {netns}) or check `ip netns list`",
            )
    directory = r.get(DIR) or None
    if directory is not None:
        if not directory.startswith("/"):
            r.problem("dir", f"'{directory}' is not an absolute path", "give the full path")
        elif ssh is None and not Path(directory).is_dir():
            r.problem("dir", f"{directory} is not an existing directory", "create it first")
    port = r.get(FIO_PORT)
    r.finish()
    return HostSpec(name, address, netns, ssh, directory, port)


def parse_hosts(r: Reader) -> tuple[HostSpec, ...]:
    """The `hosts:` section (absent: no hosts). Problems are collected on `r`."""
    if not r.has("hosts"):
        return ()
    raw = r.raw("hosts")
    if not isinstance(raw, list):
        r.problem(
            "hosts",
            "expected a list of hosts",
            "write one entry per line starting with '- ' (local, or {name, address, …})",
        )
        return ()
    hosts: list[HostSpec] = []
    for i, entry in enumerate(raw):
        if entry == "local":
            host = HostSpec("local")
        elif isinstance(entry, str):
            r.problem(
                f"hosts[{i}]",
                f"'{entry}' is not a host",
                "write local, or a mapping such as {name: a, address: 10.0.0.2, ssh: …}",
            )
            continue
        else:
            host = _host(Reader(entry, f"{r.at('hosts')}[{i}]", r.problems,
                                declared=HOST_FIELDS))
        if not host.name:
            continue
        if any(h.name == host.name for h in hosts):
            r.problem(
                f"hosts[{i}]",
                f"host name '{host.name}' is used twice",
                "give every host its own name",
            )
        elif (why := fieldrules.name_problem(host.name)) is not None:
            # The same rule as target names: host names become parts of file names too.
            r.problem(f"hosts[{i}].name", why, "rename it, e.g. client-1")
        else:
            hosts.append(host)
    return tuple(hosts)


__all__ = ["DEFAULT_FIO_PORT", "HostError", "HostSpec", "SSHSettings", "parse_hosts"]
