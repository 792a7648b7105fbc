"""Test hosts on one machine: network namespaces joined to this one by veth pairs, and
a real sshd inside one of them. Used by test_hosts.py, test_multihost.py and
bench/multihost.py.

Each namespace `vbtN` gets the pair 10.213.N.0/30: 10.213.N.1 on this side
(`vbtNh`), 10.213.N.2 inside (`vbtNn`). N is the first index with no such address
and no such namespace, so parallel users do not collide. Everything is deleted on
exit, also after a failure; processes are started through volbench.system.proc and
stopped by their PID.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from volbench.system import proc

NETNS_DIR = Path("/run/netns")
SSHD = "/usr/sbin/sshd"
SSHD_PRIVSEP = Path("/run/sshd")


@dataclass(frozen=True)
class NetnsHost:
    netns: str
    address: str  # inside the namespace
    outside: str  # this machine's end of the pair


def _ip(*args: str, check: bool = True) -> proc.Completed:
    return proc.run(["ip", *args], timeout=30, check=check)


def _taken() -> set[int]:
    used = (
        {int(p.name[3:]) for p in NETNS_DIR.glob("vbt*") if p.name[3:].isdigit()}
        if NETNS_DIR.exists()
        else set()
    )
    for line in _ip("-4", "-o", "addr").stdout.splitlines():
        parts = line.split()
        for part in parts:
            if part.startswith("10.213."):
                used.add(int(part.split(".")[2]))
    return used


def _claim() -> int:
    """A free number, taken by creating its namespace (which fails when another pytest on
    the machine took the same number between the look and the add)."""
    while True:
        n = min(set(range(1, 251)) - _taken())
        if _ip("netns", "add", f"vbt{n}", check=False).returncode == 0:
            return n


def _create(n: int) -> NetnsHost:
    """The namespace's link and addresses (the namespace itself is made by _claim)."""
    ns, outside, inside = f"vbt{n}", f"vbt{n}h", f"vbt{n}n"
    _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
    _ip("link", "set", inside, "netns", ns)
    _ip("addr", "add", f"10.213.{n}.1/30", "dev", outside)
    _ip("link", "set", outside, "up")
    _ip("-n", ns, "addr", "add", f"10.213.{n}.2/30", "dev", inside)
    _ip("-n", ns, "link", "set", inside, "up")
    _ip("-n", ns, "link", "set", "lo", "up")
    return NetnsHost(ns, f"10.213.{n}.2", f"10.213.{n}.1")


def _delete(n: int) -> None:
    # Deleting the namespace destroys its end of the pair, and with it this end.
    _ip("netns", "del", f"vbt{n}", check=False)
    _ip("link", "del", f"vbt{n}h", check=False)


@contextmanager
def namespaces(count: int) -> Iterator[list[NetnsHost]]:
    made: list[int] = []
    try:
        for _ in range(count):
            # Only what this pytest made is deleted at the end: before, a number another
            # pytest took first was added to `made` anyway, its add failed, and the
            # clean-up deleted the other's namespace mid-run ("Cannot open network
            # namespace vbt6", seen with two worktrees' tests at once).
            n = _claim()
            made.append(n)
            _create(n)
        yield [NetnsHost(f"vbt{n}", f"10.213.{n}.2", f"10.213.{n}.1") for n in made]
    finally:
        for n in made:
            _delete(n)


def listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class SSHLab:
    host: NetnsHost
    key: Path  # authorized
    other_key: Path  # not authorized
    known_hosts: Path  # holds the server's real host key
    wrong_known_hosts: Path  # holds another key for the same address
    empty_known_hosts: Path


def _keygen(path: Path) -> Path:
    proc.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "volbench-test", "-f", str(path)],
        timeout=30,
    )
    return path


@contextmanager
def sshd(host: NetnsHost, directory: Path) -> Iterator[SSHLab]:
    """A real sshd listening only on `host`'s address (port 22 of its own namespace)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    hostkey, key, other = (_keygen(directory / n) for n in ("hostkey", "client", "other"))
    (directory / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    public = " ".join(Path(f"{hostkey}.pub").read_text().split()[:2])
    wrong = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    (directory / "known_hosts").write_text(f"{host.address} {public}\n")
    (directory / "wrong_known_hosts").write_text(f"{host.address} {wrong}\n")
    (directory / "empty_known_hosts").write_text("")
    config = directory / "sshd_config"
    # StrictModes off: the files live under /var/tmp, whose mode sshd would reject.
    config.write_text(
        f"ListenAddress {host.address}:22\nHostKey {hostkey}\n"
        f"AuthorizedKeysFile {directory / 'authorized_keys'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
        "PidFile none\nLogLevel VERBOSE\n"
    )
    made_privsep = not SSHD_PRIVSEP.exists()
    SSHD_PRIVSEP.mkdir(mode=0o755, exist_ok=True)
    server = proc.start(
        ["ip", "netns", "exec", host.netns, SSHD, "-D", "-e", "-f", str(config)],
        log=directory / "sshd.log",
    )
    try:
        deadline = time.monotonic() + 15
        while not listening(host.address, 22):
            if not server.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {server.output()}")
            time.sleep(0.05)
        yield SSHLab(
            host,
            key,
            other,
            directory / "known_hosts",
            directory / "wrong_known_hosts",
            directory / "empty_known_hosts",
        )
    finally:
        server.stop()
        if made_privsep:
            with contextlib.suppress(OSError):
                SSHD_PRIVSEP.rmdir()


def tagged_processes() -> list[int]:
    """PIDs of processes started by volbench on a remote host (their VOLBENCH_TAG)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if b"VOLBENCH_TAG=" in (entry / "environ").read_bytes():
                found.append(int(entry.name))
    return found


def fio_servers(address: str) -> list[int]:
    """PIDs of fio servers bound to `address` (ours: the address is a test namespace's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            # fio rewrites its argv in place (the ',' becomes a NUL): match the prefix.
            if argv[0].endswith(b"fio") and any(
                a.startswith(f"--server=ip:{address}".encode()) for a in argv
            ):
                found.append(int(entry.name))
    return found


def processes_in(netns: str) -> list[int]:
    """PIDs of processes inside the network namespace `netns` (its nsfs inode)."""
    try:
        inode = (NETNS_DIR / netns).stat().st_ino
    except OSError:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "ns" / "net").stat().st_ino == inode:
                    found.append(int(entry.name))
    return found


def tcp_listening() -> set[tuple[str, int]]:
    """(address, port) of every listening TCP socket in this machine's own namespace."""
    from volbench.services.pgclients import proc_net_address

    found = set()
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = row.split()
            if len(cols) > 3 and cols[3] == "0A":  # LISTEN
                address, port = cols[1].split(":")
                found.add((proc_net_address(address), int(port, 16)))
    return found
