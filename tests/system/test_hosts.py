"""Load hosts: the hosts: section, commands in namespaces and over real SSH, errors that
name the host, background processes that always end (also through `volbench cleanup`)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hostlab
from bounds import within
from support import need, tool
from volbench.core.errors import ExperimentError
from volbench.engine import kinds
from volbench.engine.experiment import parse_document
from volbench.remote.hosts import HostError, HostSpec, SSHSettings
from volbench.remote.session import Session, open_session, remote_argv
from volbench.system import journal
from volbench.system.host import hostinfo


def doc(host_list: Any, **target: Any) -> dict[str, Any]:
    t = {"name": "multi", "type": "hosts", "hosts": ["a"], **target}
    return {
        "name": "h",
        "hosts": host_list,
        "targets": [{"name": "d", "type": "directory", "path": "/tmp"}, t],
        "workloads": [{"name": "r", "tool": "fio"}],
    }


def problems(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ExperimentError) as err:
        parse_document(document)
    return [str(p) for p in err.value.problems]


def test_hosts_section_reads_every_kind(tmp_path: Path) -> None:
    key = tmp_path / "id"
    key.write_text("x")
    exp = parse_document(
        doc(
            [
                "local",
                {
                    "name": "a",
                    "address": "10.0.0.2",
                    "netns": "inside",
                    "dir": "/srv/b",
                    "ssh": {
                        "user": "bench",
                        "key": str(key),
                        "port": 2222,
                        "host_key": "accept-new",
                    },
                },
            ]
        )
    )
    local, a = exp.hosts
    assert local == HostSpec("local") and local.address == "127.0.0.1" and not local.remote
    assert a.ssh == SSHSettings("bench", "10.0.0.2", 2222, str(key), None, "accept-new")
    assert a.netns == "inside" and a.dir == "/srv/b" and a.fio_port == 8765 and a.remote
    target = exp.target("multi")
    assert [h.name for h in target.hosts] == ["a"]  # type: ignore[attr-defined]
    assert HostSpec.from_json(a.to_json()) == a


def test_host_problems_name_the_field(tmp_path: Path) -> None:
    found = problems(
        doc(
            [
                {"name": "a", "netns": "vb-none-such"},
                {
                    "name": "b",
                    "ssh": {
                        "user": "root",
                        "key": str(tmp_path / "missing"),
                        "known_hosts": str(tmp_path / "nokh"),
                        "host_key": "off",
                        "pasword": "x",
                    },
                },
                {"name": "a", "address": "not an address"},
                {"name": "d", "dir": "relative/path"},
                "elsewhere",
            ]
        )
    )
    text = "\n".join(found)
    assert "hosts[0].address: is required for a host in a namespace or over SSH" in text
    assert "hosts[0].netns: network namespace 'vb-none-such' does not exist" in text
    assert "hosts[1].address: is required" in text
    assert f"hosts[1].ssh.key: key file {tmp_path / 'missing'} does not exist" in text
    assert f"hosts[1].ssh.known_hosts: {tmp_path / 'nokh'} does not exist" in text
    assert "hosts[1].ssh.host_key: 'off' is not one of: strict, accept-new" in text
    assert "hosts[1].ssh.pasword: unknown field" in text
    assert "hosts[2].address: 'not an address' is not an IP address or host name" in text
    assert "hosts[2]: host name 'a' is used twice" in text
    assert "hosts[3].dir: 'relative/path' is not an absolute path" in text
    assert "hosts[4]: 'elsewhere' is not a host" in text


def test_multihost_target_problems_name_the_field(tmp_path: Path) -> None:
    remote = {"name": "far", "address": "192.0.2.9", "ssh": {"user": "root"}}
    text = "\n".join(
        problems(
            {
                "name": "h",
                "hosts": ["local", remote, {"name": "near", "address": "127.0.0.2"}],
                "targets": [
                    {"name": "d", "type": "directory", "path": "/tmp"},
                    {"name": "typo", "type": "hosts", "hosts": ["locl"], "on": ["d"]},
                    {
                        "name": "count",
                        "type": "hosts",
                        "hosts": ["local", "near", "far"],
                        "on": ["d", "d"],
                    },
                    {"name": "remote", "type": "hosts", "hosts": ["far"], "on": ["d"]},
                    {"name": "nodir", "type": "hosts", "hosts": ["local"]},
                    {"name": "twice", "type": "hosts", "hosts": ["local", "local"], "on": ["d"]},
                ],
                "workloads": [{"name": "r", "tool": "fio"}, {"name": "b", "tool": "dd"}],
            }
        )
    )
    assert "targets[1].hosts: 'locl' is not a host name (did you mean 'local'?)" in text
    assert "targets[2].on: 2 targets for 3 hosts" in text
    assert "targets[3].on: host far is another machine: it cannot use target d" in text
    assert "targets[4].on: host local has no target and no dir:" in text
    assert "targets[5].hosts: host 'local' is listed twice" in text
    assert "workload b (dd) cannot run on a target of type hosts" in text


def test_ssh_argv_uses_keys_only_and_checks_host_keys() -> None:
    ssh = SSHSettings("bench", "192.0.2.5", 2222, "/k/id", "/k/known")
    spec = HostSpec("far", "10.9.9.9", netns="lab c1", ssh=ssh)
    argv = remote_argv(spec, ["fio", "--server=ip:10.9.9.9,8765", "a b"])
    assert argv[0] == "ssh" and argv[-2:] == [
        "192.0.2.5",
        "ip netns exec 'lab c1' fio --server=ip:10.9.9.9,8765 'a b'",
    ]
    opts = " ".join(argv)
    for option in (
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "PasswordAuthentication=no",
        "KbdInteractiveAuthentication=no",
        "UserKnownHostsFile=/k/known",
        "-i /k/id -o IdentitiesOnly=yes",
        "-p 2222 -l bench",
    ):
        assert option in opts
    relaxed = SSHSettings("bench", "192.0.2.5", host_key="accept-new")
    assert "StrictHostKeyChecking=accept-new" in remote_argv(HostSpec("x", ssh=relaxed), ["true"])
    assert remote_argv(HostSpec("n", netns="vb1"), ["true"]) == [
        "ip",
        "netns",
        "exec",
        "vb1",
        "true",
    ]
    assert remote_argv(HostSpec("here"), ["true"]) == ["true"]


# -- on this machine's test hosts -----------------------------------------------------------


@pytest.fixture
def lab() -> Iterator[list[hostlab.NetnsHost]]:
    need(Path("/run").exists(), "no /run")
    tool("ip")
    with hostlab.namespaces(2) as hosts:
        yield hosts


@pytest.fixture
def sshlab(lab: list[hostlab.NetnsHost], tmp_path: Path) -> Iterator[hostlab.SSHLab]:
    tool("ssh")
    tool("ssh-keygen")
    need(Path(hostlab.SSHD).exists(), "openssh-server is not installed")
    with hostlab.sshd(lab[1], tmp_path / "ssh") as ssh:
        yield ssh


def ssh_host(
    lab: hostlab.SSHLab,
    *,
    key: Path | None = None,
    known: Path | None = None,
    address: str | None = None,
    policy: str = "strict",
) -> HostSpec:
    address = address or lab.host.address
    settings = SSHSettings(
        "root",
        address,
        key=str(key or lab.key),
        known_hosts=str(known or lab.known_hosts),
        host_key=policy,
        connect_timeout=5,
    )
    return HostSpec("far", address, ssh=settings)


# Bounds of the paired clock checks (docs/testing.md has the spread they come from).
RATIO_NETNS = 5.0
RATIO_SSH = 0.8


def paired_uncertainty(subject: Session, reference: Session, pairs: int) -> tuple[float, str]:
    """Subject / reference clock uncertainty, each read `pairs` times in alternation (one
    sample each, so both see the CPU of the same moments) and kept at its smallest, as
    clock_offset keeps its tightest sample; and the two in words."""
    ours, theirs = [], []
    for _ in range(pairs):
        ours.append(subject.clock_offset(1).uncertainty_s)
        theirs.append(reference.clock_offset(1).uncertainty_s)
    words = f"{min(ours) * 1e3:.1f} ms against {min(theirs) * 1e3:.1f} ms"
    return min(ours) / min(theirs), words


@pytest.mark.root
def test_namespace_host_runs_inside_its_namespace(
    lab: list[hostlab.NetnsHost], tmp_path: Path
) -> None:
    host = HostSpec("a", lab[0].address, netns=lab[0].netns)
    with (
        journal.opened("test") as jrnl,
        jrnl.scope() as scope,
        open_session(host, scope) as session,
    ):
        addresses = session.run(["ip", "-4", "-o", "addr"]).stdout
        assert lab[0].address in addresses and lab[1].address not in addresses
        clock = session.clock_offset()
        # Same kernel clock: the offset is within the measured round trip.
        assert abs(clock.offset_s) <= clock.uncertainty_s + 0.005
        assert clock.uncertainty_s > 0  # a real round trip
        # Paired: the namespace costs one more exec (`ip netns exec`) than reading this
        # machine's clock the same way, in alternating slices.
        ratio, words = paired_uncertainty(session, Session(HostSpec("here")), pairs=8)
        within("netns clock: uncertainty / this machine's", ratio, high=RATIO_NETNS,
               reference=f"this machine's clock read the same way: {words}")
        process = session.start(["sleep", "300"], scope=scope, log=tmp_path / "sleep.log")
        assert process.alive()
        process.stop()
        assert not process.alive()
    with pytest.raises(HostError, match=r"host a: .*failed with exit code 1"):
        Session(host).run(["false"])


@pytest.mark.root
def test_ssh_host_runs_commands_and_background_processes(sshlab: hostlab.SSHLab) -> None:
    host = ssh_host(sshlab)
    with (
        journal.opened("test") as jrnl,
        jrnl.scope() as scope,
        open_session(host, scope) as session,
    ):
        assert session.control is not None and Path(session.control).exists()
        env = hostinfo.parse_probe(session.run(hostinfo.REMOTE_PROBE).stdout)
        assert env["kernel"] == os.uname().release
        assert env["tools"]["fio"] == hostinfo.tool_version("fio")
        # The sshd runs in the second namespace: its commands see that address.
        assert sshlab.host.address in session.run(["ip", "-4", "-o", "addr"]).stdout
        clock = session.clock_offset()
        assert abs(clock.offset_s) <= clock.uncertainty_s + 0.005
        # Paired: the master connection keeps round trips short, against a connection of
        # its own per command (key exchange, authentication) in alternating slices.
        ratio, words = paired_uncertainty(session, Session(host), pairs=4)
        within("ssh clock: master's uncertainty / a new connection's", ratio, high=RATIO_SSH,
               reference=f"the same host over a new SSH connection per command: {words}")
        before = set(hostlab.tagged_processes())
        process = session.start(["sleep", "300"], scope=scope, log=Path("unused-remotely"))
        assert process.alive()
        started = set(hostlab.tagged_processes()) - before
        assert len(started) == 1
        process.stop()
        assert not process.alive() and not set(hostlab.tagged_processes()) & started


@pytest.mark.root
def test_cleanup_stops_remote_processes_of_a_dead_volbench(
    sshlab: hostlab.SSHLab, tmp_path: Path
) -> None:
    host = ssh_host(sshlab)
    jrnl = journal.Journal.create("crashed")
    scope = jrnl.scope()
    session = Session(host)  # no master: the crash leaves nothing else behind
    before = set(hostlab.tagged_processes())
    session.start(["sleep", "300"], scope=scope, log=tmp_path / "x")
    started = set(hostlab.tagged_processes()) - before
    assert started
    # volbench "dies": the journal stays behind with a dead owner.
    jrnl._file.close()
    lines = jrnl.path.read_text().splitlines()
    lines[0] = lines[0].replace(f'"pid": {os.getpid()}', '"pid": 999999999')
    jrnl.path.write_text("\n".join(lines) + "\n")
    removed, errors = kinds.cleanup()
    assert errors == [] and any(r.startswith("remote-process") for r in removed)
    deadline = time.monotonic() + 5
    while set(hostlab.tagged_processes()) & started and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(hostlab.tagged_processes()) & started


@pytest.mark.root
def test_ssh_errors_name_the_host_and_the_fix(
    sshlab: hostlab.SSHLab, lab: list[hostlab.NetnsHost]
) -> None:
    def error(spec: HostSpec) -> str:
        with (
            journal.opened("t") as jrnl,
            jrnl.scope() as scope,
            pytest.raises(HostError) as err,
            open_session(spec, scope),
        ):
            pass
        return str(err.value)

    refused = error(ssh_host(sshlab, key=sshlab.other_key))
    assert refused.startswith("host far: SSH refused the key") and "authorized_keys" in refused
    # The first namespace runs no sshd: nothing listens on its port 22.
    closed = error(ssh_host(sshlab, address=lab[0].address))
    assert closed.startswith(f"host far: not reachable over SSH at root@{lab[0].address}")
    assert "Connection refused" in closed
    # .3 is the broadcast address of the test /30: no host can answer there.
    nowhere = error(ssh_host(sshlab, address=lab[0].address[:-1] + "3"))
    assert nowhere.startswith("host far: not reachable over SSH")
    changed = error(ssh_host(sshlab, known=sshlab.wrong_known_hosts))
    assert "differs from the one in" in changed and "refused" in changed
    unknown = error(ssh_host(sshlab, known=sshlab.empty_known_hosts))
    assert "is not in" in unknown and "ssh-keyscan" in unknown
    # accept-new learns an unknown key, but never accepts a changed one.
    learnt = ssh_host(sshlab, known=sshlab.empty_known_hosts, policy="accept-new")
    assert Session(learnt).run(["true"]).returncode == 0
    # Debian hashes the host name in known_hosts; the key is the server's real one.
    real_key = sshlab.known_hosts.read_text().split()[2]
    assert sshlab.empty_known_hosts.read_text().split()[2] == real_key
    wrong = ssh_host(sshlab, known=sshlab.wrong_known_hosts, policy="accept-new")
    assert "differs" in error(wrong)
