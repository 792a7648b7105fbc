"""Several load hosts at once: fio client/server output per host and in total (captured in
network namespaces), job files per host, and whole runs on this machine's test hosts:
separate and shared targets, a fio server killed mid-run, a host over real SSH, and a
SIGKILLed volbench whose remote servers `volbench cleanup` stops."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hostlab
from bounds import within
from support import DATA, need, tool
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.engine import kinds
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.system import proc
from volbench.targets.base import Built
from volbench.workloads import fio, fioclient
from volbench.workloads.base import LostHosts, RunContext, RunOutput

CAP = DATA / "fio" / "3.33"
RANDREAD = {
    "rw": "randread",
    "bs": "4k",
    "iodepth": 4,
    "numjobs": 1,
    "size": "32M",
    "runtime": 3.0,
    "ioengine": "libaio",
    "direct": 1,
}


def capture(case: str, names: tuple[str, ...] = ("a", "b")) -> dict[str, str]:
    """A captured client run as the runner would hand it over, with the manifest
    rebuilt from the capture's own command line."""
    servers = re.findall(r"--client=ip:([\d.]+),(\d+)", (CAP / f"{case}.cmd").read_text())
    manifest = [
        {
            "host": name,
            "server": f"ip:{a},{p}",
            "address": a,
            "port": int(p),
            "path": "/data",
            "device": None,
        }
        for name, (a, p) in zip(names, servers, strict=True)
    ]
    outputs = {"fio.json": (CAP / f"{case}.json").read_text(), "clients.json": json.dumps(manifest)}
    for extra in CAP.glob(f"{case}.*"):
        name = extra.name[len(case) + 1 :]
        if name.startswith("fio-") or name in ("stdout", "stderr"):
            outputs[name] = extra.read_text()
    return outputs


def parse(outputs: dict[str, str]) -> Parsed:
    spec = fio.FioSpec("r", "fio")
    return fio.KIND.parse_output(spec, RANDREAD, RunOutput(outputs))


def value(metrics: tuple[Metric, ...], name: str, **tags: str) -> float:
    found = [
        m.value
        for m in metrics
        if m.name == name and all(m.tags.get(k) == v for k, v in tags.items())
    ]
    assert len(found) == 1 and found[0] is not None, (name, tags, found)
    return found[0]


def test_client_results_are_tagged_with_host_names_and_add_up() -> None:
    parsed = parse(capture("client-netns-2hosts"))
    data = fio.load_json((CAP / "client-netns-2hosts.json").read_text(), "capture")
    raw = {e["hostname"]: e["read"] for e in data["client_stats"] if e["jobname"] != "All clients"}
    a = value(parsed.metrics, "iops", host="a", op="read")
    b = value(parsed.metrics, "iops", host="b", op="read")
    assert a == raw["10.213.1.2"]["iops"] and b == raw["10.213.2.2"]["iops"]
    assert value(parsed.metrics, "iops", host="all", op="read") == pytest.approx(a + b, rel=1e-3)
    total_bytes = value(parsed.metrics, "io_bytes", host="all", op="read")
    assert total_bytes == raw["10.213.1.2"]["io_bytes"] + raw["10.213.2.2"]["io_bytes"]
    assert {m.tags.get("host") for m in parsed.metrics} == {"a", "b", "all"}
    assert {h.tags["host"] for h in parsed.histograms if h.name == "clat"} == {"a", "b"}
    series = {
        s.tags["host"]: dict(s.points)
        for s in parsed.series
        if s.name == "iops" and s.tags["op"] == "read"
    }
    assert set(series) == {"a", "b", "all"} and series["a"]
    for t, total in series["all"].items():
        assert total == series["a"].get(t, 0) + series["b"].get(t, 0)


def test_a_server_killed_mid_run_is_named_and_the_others_are_kept() -> None:
    with pytest.raises(LostHosts) as err:
        parse(capture("client-netns-1killed"))
    assert list(err.value.lost) == ["a"]
    assert str(err.value).startswith(
        "cannot read fio output from client/server run: host a: "
        "its fio server at 10.213.1.2:8772 disconnected"
    )
    kept = err.value.partial
    assert {m.tags.get("host") for m in kept.metrics} == {"b"}  # no total without a
    # Needs no reference: a floor far below an unthrottled disk's rate.
    assert value(kept.metrics, "iops", host="b", op="read") > 1000
    assert {s.tags["host"] for s in kept.series} == {"b"}


def test_a_server_that_does_not_answer_is_named() -> None:
    with pytest.raises(LostHosts) as err:
        parse(capture("client-netns-1refused"))
    assert list(err.value.lost) == ["a"]
    assert "fio could not connect to its server at 10.213.1.2:8773" in err.value.lost["a"]
    assert {m.tags.get("host") for m in err.value.partial.metrics} == {"b"}


def test_one_host_is_its_own_total() -> None:
    parsed = parse(capture("client-1server-jsonplus", ("solo",)))
    assert value(parsed.metrics, "iops", host="all", op="read") == value(
        parsed.metrics, "iops", host="solo", op="read"
    )
    assert {h.tags["host"] for h in parsed.histograms if h.name == "clat"} == {"solo", "all"}


def context(tmp_path: Path, clients: list[dict[str, Any]]) -> RunContext:
    built = Built("multi", "hosts", None)
    return RunContext(built, tmp_path / "run", {fioclient.CLIENTS: json.dumps(clients)})


def test_one_job_file_per_host_each_after_its_client(tmp_path: Path) -> None:
    clients = [
        {
            "host": h,
            "server": f"ip:10.0.0.{i},8765",
            "address": f"10.0.0.{i}",
            "port": 8765,
            "path": "/mnt/shared",
            "device": None,
        }
        for i, h in enumerate(("a", "b", "c"), start=1)
    ]
    spec = fio.FioSpec("r", "fio", options={"norandommap": "1"})
    inv = fio.KIND.command(spec, {**RANDREAD, "runtime": 5.0}, context(tmp_path, clients))
    argv = list(inv.argv)
    assert argv[:2] == ["fio", "--output-format=json+"]
    pairs = argv[3:]
    assert pairs[0::2] == [f"--client=ip:10.0.0.{i},8765" for i in (1, 2, 3)]
    jobs = [inv.files[Path(p)] for p in pairs[1::2]]  # written by the engine, not here
    for host, job in zip("abc", jobs, strict=True):
        # Hosts sharing one directory never share a data file.
        assert f"filename=/mnt/shared/volbench-fio-32M-{host}.dat\n" in job
        assert f"write_iops_log=fio-{host}\n" in job and "runtime=5\n" in job
        assert "norandommap=1\n" in job and job.startswith("[r]\n")
    assert json.loads(inv.files[inv.outputs["clients.json"]]) == clients
    # The layout writes each host's file once; hosts sharing a device write it once.
    layout = fio.KIND.setup(spec, RANDREAD, context(tmp_path, clients))
    assert len(layout) == 1 and len(layout[0].argv) == 3 + 2 * 3
    on_device = [{**c, "path": None, "device": "/dev/sdz"} for c in clients]
    (tmp_path / "run2").mkdir()
    ctx = context(tmp_path, on_device)
    layout = fio.KIND.setup(spec, RANDREAD, RunContext(ctx.built, tmp_path / "run2", ctx.service))
    assert len(layout[0].argv) == 3 + 2


def test_a_users_job_file_gets_each_hosts_directory(tmp_path: Path) -> None:
    own = tmp_path / "mine.fio"
    own.write_text("[global]\nrw=read\n[job]\nsize=8M\n")
    clients = [
        {
            "host": "a",
            "server": "ip:10.0.0.1,8765",
            "address": "10.0.0.1",
            "port": 8765,
            "path": "/srv/x",
            "device": None,
        }
    ]
    inv = fio.KIND.command(fio.FioSpec("u", "fio", jobfile=own), {}, context(tmp_path, clients))
    text = inv.files[Path(inv.argv[-1])]
    assert text.startswith("[global]\ndirectory=/srv/x\nwrite_iops_log=fio-a\n")
    assert text.endswith(own.read_text())


def test_each_host_s_job_is_confined_to_that_host_s_directory(tmp_path: Path) -> None:
    from volbench.core.errors import ExperimentError

    clients = [{"host": "a", "server": "ip:10.0.0.1,8765", "address": "10.0.0.1",
                "port": 8765, "path": "/srv/x", "device": None}]
    escape = fio.FioSpec("u", "fio", options={"write_bw_log": "/var/log/bw"})
    with pytest.raises(ExperimentError, match=r"(?s)on a: .*write_bw_log: '/var/log/bw'"):
        fio.KIND.command(escape, RANDREAD, context(tmp_path, clients))
    inside = fio.FioSpec("u", "fio", options={"write_bw_log": "${VOLBENCH_DIR}/bw"})
    inv = fio.KIND.command(inside, RANDREAD, context(tmp_path, clients))
    assert "write_bw_log=/srv/x/bw\n" in inv.files[Path(inv.argv[-1])]


def test_ordinary_targets_run_fio_locally(tmp_path: Path) -> None:
    built = Built("plain", "directory", tmp_path)
    inv = fio.KIND.command(fio.FioSpec("r", "fio"), RANDREAD, RunContext(built, tmp_path / "r"))
    assert not any(a.startswith("--client") for a in inv.argv)
    assert "clients.json" not in inv.outputs


# -- whole runs on this machine's test hosts ------------------------------------------------


@pytest.fixture
def lab() -> Iterator[list[hostlab.NetnsHost]]:
    tool("ip")
    tool("fio")
    with hostlab.namespaces(3) as hosts:
        yield hosts
    for host in hosts:
        assert not hostlab.fio_servers(host.address), "a fio server outlived its run"


def hosts_section(lab: list[hostlab.NetnsHost]) -> list[dict[str, Any]]:
    return [
        {"name": n, "netns": h.netns, "address": h.address}
        for n, h in zip("abc", lab, strict=False)
    ]


def run(doc: dict[str, Any], db: Path) -> tuple[list[RunResult], dict[str, Any], Any]:
    outcome = run_experiment(parse_document(doc), db=db)
    with Store(db) as store:
        runs = store.runs([outcome.experiment_id], outputs=True, series=True)
        targets = {t.name: t for t in store.targets(outcome.experiment_id)}
    return runs, targets, outcome


def fio_job(runtime: str) -> dict[str, Any]:
    return {
        "name": "r",
        "tool": "fio",
        "rw": "randread",
        "bs": "4k",
        "iodepth": 8,
        "size": "32M",
        "runtime": runtime,
    }


@pytest.mark.root
@pytest.mark.slow
def test_hosts_on_separate_and_shared_targets(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    doc = {
        "name": "mh",
        "workdir": str(workdir),
        "hosts": hosts_section(lab),
        "repeat": 1,
        "targets": [
            {"name": "d1", "type": "loopdisk", "size": "320M"},
            {"name": "d2", "type": "loopdisk", "size": "320M"},
            {"name": "separate", "type": "hosts", "hosts": ["a", "b"], "on": ["d1", "d2"]},
            {"name": "shared", "type": "hosts", "hosts": ["a", "b", "c"], "on": ["d1"]},
        ],
        "workloads": [fio_job("2s")],
    }
    runs, targets, outcome = run(doc, tmp_path / "r.db")
    assert outcome.counts == {"ok": 4}, [r.error for r in runs]
    by = {r.target: r for r in runs}
    for name, hosts in (("separate", "ab"), ("shared", "abc")):
        r = by[name]
        per_host = [value(r.metrics, "iops", host=h, op="read") for h in hosts]
        for host, v in zip(hosts, per_host, strict=True):
            # Needs no reference: a floor far below an unthrottled disk's rate.
            within(f"multihost {name}: host {host} IOPS (floor)", v, low=100)
        # fio's "All clients" rate is every host's I/Os over the longest host's runtime:
        # the sum of the hosts' rates only when they ran equally long (a busy machine
        # starts them up to tenths of a second apart: 18013 against 18395, measured).
        ios = sum(value(r.metrics, "total_ios", host=h, op="read") for h in hosts)
        runtime = value(r.metrics, "runtime", host="all", op="read")
        assert runtime >= max(value(r.metrics, "runtime", host=h, op="read") for h in hosts)
        total = value(r.metrics, "iops", host="all", op="read")
        assert total == pytest.approx(ios / runtime, rel=1e-3)
        assert total <= sum(per_host) * (1 + 1e-3)
        # The disks saw the reads the hosts reported (direct I/O, 4 KiB each).
        assert r.annotations["device_io"]["read_ios"] == pytest.approx(ios, rel=0.1)
        servers = r.annotations["service"]["fio_servers"]
        assert sorted(servers) == list(hosts)
        for host, info in servers.items():
            assert abs(info["clock"]["offset_s"]) <= info["clock"]["uncertainty_s"] + 0.005
            assert info["server"].startswith(f"ip:{lab['abc'.index(host)].address},")
        env = targets[name].info["hosts"]
        assert {h: env[h]["environment"]["kernel"] for h in hosts} == {
            h: os.uname().release for h in hosts
        }
    # Both targets existed at once with the same hosts: their servers used other ports.
    ports = {
        by[t].annotations["service"]["fio_servers"]["a"]["server"] for t in ("separate", "shared")
    }
    assert len(ports) == 2
    assert by["separate"].annotations["service"]["fio_servers"]["b"]["target"] == "d2"


def _kill_server_during_run(address: str, killed: list[int]) -> None:
    """Wait for the measured client run (not the layout), then SIGKILL the server of
    `address` with its process group: the host's fio dies mid-run."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"--client=ip:" + address.encode() in argv and b"fio.json" in argv:
                time.sleep(1.5)
                for pid in hostlab.fio_servers(address):
                    if os.getpgid(pid) == pid:
                        os.killpg(pid, signal.SIGKILL)
                        killed.append(pid)
                return
        time.sleep(0.05)


@pytest.mark.root
@pytest.mark.slow
def test_a_server_killed_mid_run_fails_that_run_and_keeps_the_others(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    doc = {
        "name": "kill",
        "workdir": str(workdir),
        "hosts": hosts_section(lab[:2]),
        "repeat": 2,
        "drop_caches": False,
        "targets": [
            {"name": "disk", "type": "loopdisk", "size": "320M"},
            {"name": "pair", "type": "hosts", "hosts": ["a", "b"], "on": ["disk"]},
        ],
        "workloads": [fio_job("3s")],
    }
    killed: list[int] = []
    killer = threading.Thread(target=_kill_server_during_run, args=(lab[0].address, killed))
    killer.start()
    try:
        runs, _, _ = run(doc, tmp_path / "k.db")
    finally:
        killer.join()
    assert killed, "the fio server of host a was never found"
    pair = [r for r in runs if r.target == "pair"]
    assert [r.status for r in pair] == [Status.FAILED, Status.FAILED]
    assert all(r.status is Status.OK for r in runs if r.target == "disk")
    first, second = pair
    # fio reports the survivor; volbench names the lost host.
    with pytest.raises(LostHosts) as err:
        parse(dict(first.outputs))
    assert list(err.value.lost) == ["a"] and "disconnected" in err.value.lost["a"]
    # Needs no reference: a floor far below an unthrottled disk's rate.
    within("multihost killed: survivor IOPS (floor)",
           value(err.value.partial.metrics, "iops", host="b", op="read"), low=100)
    # Whatever the runner keeps of a failed run, it is never counted for a lost host.
    assert all(m.tags.get("host") == "b" for m in first.metrics)
    # The failed run keeps host b's numbers and names host a.
    assert "host a" in first.error and first.metrics
    # The next run finds host a's server gone: fio runs b alone and exits 0; volbench
    # fails the run and says which host is missing.
    assert second.error.startswith(
        "cannot read fio output from client/server run: host a: "
        "fio could not connect to its server at"
    )


@pytest.fixture
def sshlab(lab: list[hostlab.NetnsHost], tmp_path: Path) -> Iterator[hostlab.SSHLab]:
    tool("ssh")
    tool("ssh-keygen")
    need(Path(hostlab.SSHD).exists(), "openssh-server is not installed")
    with hostlab.sshd(lab[1], tmp_path / "ssh") as ssh:
        yield ssh
    assert not hostlab.tagged_processes(), "a remote process outlived its run"


def ssh_doc(
    lab: list[hostlab.NetnsHost], ssh: hostlab.SSHLab, workdir: Path, runtime: str
) -> dict[str, Any]:
    far_dir = workdir / "far"
    near_dir = workdir / "near"
    far_dir.mkdir()
    near_dir.mkdir()

    def remote(name: str, key: Path) -> dict[str, Any]:
        return {
            "name": name,
            "address": ssh.host.address,
            "dir": str(far_dir),
            "ssh": {"user": "root", "key": str(key), "known_hosts": str(ssh.known_hosts)},
        }

    return {
        "name": "ssh",
        "workdir": str(workdir),
        "repeat": 1,
        "hosts": [
            {
                "name": "near",
                "netns": lab[0].netns,
                "address": lab[0].address,
                "dir": str(near_dir),
            },
            remote("far", ssh.key),
            remote("locked", ssh.other_key),
        ],
        "targets": [
            {"name": "mixed", "type": "hosts", "hosts": ["near", "far"]},
            {"name": "denied", "type": "hosts", "hosts": ["near", "locked"]},
        ],
        "workloads": [fio_job(runtime)],
    }


@pytest.mark.root
def test_a_host_over_ssh_in_a_run(
    lab: list[hostlab.NetnsHost], sshlab: hostlab.SSHLab, workdir: Path, tmp_path: Path
) -> None:
    runs, targets, outcome = run(ssh_doc(lab, sshlab, workdir, "2s"), tmp_path / "s.db")
    (mixed,) = runs
    assert mixed.status is Status.OK, mixed.error
    assert {m.tags.get("host") for m in mixed.metrics if m.name == "iops"} == {"near", "far", "all"}
    far = targets["mixed"].info["hosts"]["far"]
    assert far["reached"] == f"far (ssh root@{sshlab.host.address}:22, {sshlab.host.address})"
    assert far["environment"]["tools"]["fio"].startswith("fio-3")
    # Physical: one kernel clock, read between two local readings. Whether the master
    # connection keeps the round trip short is paired against a new connection in
    # tests/system/test_hosts.py (here the clock was read once, inside the run).
    for host in ("near", "far"):
        clock = mixed.annotations["service"]["fio_servers"][host]["clock"]
        assert clock["uncertainty_s"] > 0
        assert abs(clock["offset_s"]) <= clock["uncertainty_s"] + 0.005
    denied = targets["denied"]
    assert denied.status == "failed"
    assert denied.error.startswith("host locked: SSH refused the key")
    assert outcome.failed_targets.keys() == {"denied"}
    # volbench's private directories on both hosts are gone.
    assert not list((workdir / "far").iterdir()) and not list((workdir / "near").iterdir())


@pytest.mark.root
@pytest.mark.slow
def test_cleanup_stops_the_remote_servers_of_a_killed_volbench(
    lab: list[hostlab.NetnsHost], sshlab: hostlab.SSHLab, workdir: Path, tmp_path: Path
) -> None:
    doc = ssh_doc(lab, sshlab, workdir, "30s")
    doc["targets"] = doc["targets"][:1]
    exp = tmp_path / "e.json"
    exp.write_text(json.dumps(doc))
    script = (
        "import sys; from pathlib import Path; from volbench.engine.experiment import load; "
        "from volbench.engine.runner import run_experiment; "
        "run_experiment(load(Path(sys.argv[1])), db=Path(sys.argv[2]))"
    )
    child = proc.start(
        [sys.executable, "-c", script, str(exp), str(tmp_path / "c.db")], log=tmp_path / "child.log"
    )
    try:
        deadline = time.monotonic() + 90
        while not hostlab.tagged_processes():
            assert child.alive() and time.monotonic() < deadline, child.output()
            time.sleep(0.1)
        time.sleep(1)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.stop()
    assert hostlab.tagged_processes(), "the remote server should outlive a SIGKILLed volbench"
    removed, errors = kinds.cleanup()
    assert errors == []
    assert any(r.startswith("remote-process") for r in removed)
    assert any(r.startswith("remote-tree") for r in removed)
    assert not hostlab.tagged_processes()
    assert not list((workdir / "far").iterdir())
