"""NFS across an emulated network hop, in the lab VM (seed 000's same-zone NFS).

One boot, shared with tests/lab/test_curves_lab.py (the `nfs_hop_boot` fixture in
tests/lab/conftest.py). The guest makes two client namespaces joined to it by veth pairs
(tests/hostlab.py) with `tc netem` delaying each direction by DELAY, then runs one
experiment: fio random 4k reads at queue depth 1 on the exported disk itself, on an NFS
mount over loopback, on an NFS mount made from a client namespace (its RPC traffic
crosses the delayed link), and from fio servers in both namespaces at once, each on
its own mount of the same export. The latency penalty of the hop must show, and be
the delay's size; teardown must leave no mount, export or namespace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volbench.store.db import Store

MiB = 1024**2
DELAY_MS = 1.0  # each way: a round trip costs 2 ms more
STORE = "/dev/disk/by-id/virtio-store"
FIO = {
    "name": "qd1",
    "tool": "fio",
    "rw": "randread",
    "bs": "4k",
    "iodepth": 1,
    "size": "32M",
    "runtime": "4s",
}
NFS = {"type": "nfs", "on": ["store"], "version": "3", "mount_options": ["nolock"]}

EXPERIMENT: dict[str, Any] = {
    "name": "nfs-hop",
    "hosts": [
        {"name": "c1", "netns": "vbt1", "address": "10.213.1.2"},
        {"name": "c2", "netns": "vbt2", "address": "10.213.2.2"},
    ],
    "targets": [
        {"name": "store", "type": "disk", "device": STORE, "fs": "xfs"},
        {"name": "loopback", **NFS},
        {"name": "hop", **NFS, "client_netns": "vbt1", "server_address": "10.213.1.1"},
        {"name": "hop2", **NFS, "client_netns": "vbt2", "server_address": "10.213.2.1"},
        {"name": "clients", "type": "hosts", "hosts": ["c1", "c2"], "on": ["hop", "hop2"]},
    ],
    "workloads": [FIO],
    "repeat": 1,
}

# The namespaces are the test's "network"; volbench only mounts through them.
GUEST_SCRIPT = r"""
import json, shutil, sys
from pathlib import Path

out, tests = Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, tests)
import hostlab
from volbench.cli import main as cli; from volbench.system import proc

delay = f"{float(sys.argv[3])}ms"
result = {}
with hostlab.namespaces(2) as hosts:
    result["hosts"] = [h.__dict__ for h in hosts]
    for h in hosts:
        n = h.netns[3:]
        proc.run(["tc", "qdisc", "add", "dev", f"vbt{n}h", "root", "netem", "delay", delay],
                 timeout=30)
        proc.run(["tc", "-n", h.netns, "qdisc", "add", "dev", f"vbt{n}n", "root", "netem",
                  "delay", delay], timeout=30)
    qdisc = proc.run(["tc", "-n", hosts[0].netns, "qdisc", "show"], timeout=30)
    result["qdisc"] = qdisc.stdout.splitlines()
    # One experiment per name after the delay (NAME.yaml -> NAME.db), in one boot.
    # SQLite needs a local filesystem: the 9p share gives "disk I/O error".
    result["run_codes"] = {}
    for name in sys.argv[4:]:
        result["run_codes"][name] = cli.main(["run", str(out / f"{name}.yaml"), "--db",
                                              f"/srv/{name}.db", "--quiet"])
        shutil.copyfile(f"/srv/{name}.db", out / f"{name}.db")
    mounts = Path("/proc/mounts").read_text().splitlines()
    result["nfs_mounts"] = [m for m in mounts if m.split()[2] in ("nfs", "nfs4")]
    done = proc.run(["exportfs", "-v"], timeout=60, check=False)
    result["exports"] = [ln for ln in done.stdout.splitlines() if ln.strip()]
result["netns"] = sorted(p.name for p in Path("/run/netns").glob("vbt*"))
(out / "checks.json").write_text(json.dumps(result))
"""


@pytest.fixture(scope="module")
def hop(nfs_hop_boot: Path) -> dict[str, Any]:
    out = nfs_hop_boot
    checks = json.loads((out / "checks.json").read_text())
    checks["run_code"] = checks["run_codes"]["hop"]
    with Store(out / "hop.db", create=False) as store:
        (row,) = store.experiments()
        targets = {t.name: t for t in store.targets(row.id)}
        runs = {r.target: r for r in store.runs([row.id])}
    return {"checks": checks, "targets": targets, "runs": runs}


def metric(run: Any, name: str, **tags: str) -> float:
    (value,) = [
        m.value
        for m in run.metrics
        if m.name == name
        and m.tags.get("op") == "read"
        and all(m.tags.get(k) == v for k, v in tags.items())
    ]
    return float(value)


@pytest.mark.lab
@pytest.mark.slow
def test_the_hop_costs_one_round_trip_per_io(hop: dict[str, Any]) -> None:
    checks, runs = hop["checks"], hop["runs"]
    assert checks["run_code"] == 0
    assert {n: str(r.status) for n, r in runs.items()} == dict.fromkeys(runs, "ok")
    assert set(runs) == {"store", "loopback", "hop", "hop2", "clients"}
    rtt = 2 * DELAY_MS / 1000
    local = metric(runs["loopback"], "lat_mean")
    far = metric(runs["hop"], "lat_mean")
    # Each 4 KiB read at queue depth 1 waits for one RPC: the hop adds one round trip.
    assert 0.8 * rtt < far - local < 1.5 * rtt + 0.002, (local, far)
    assert metric(runs["hop"], "iops") < 0.75 * metric(runs["loopback"], "iops")
    for host in ("c1", "c2"):
        assert metric(runs["clients"], "lat_mean", host=host) - local > 0.8 * rtt, host


@pytest.mark.lab
@pytest.mark.slow
def test_the_hop_is_recorded_and_nothing_is_left(hop: dict[str, Any]) -> None:
    checks, targets = hop["checks"], hop["targets"]
    info = targets["hop"].info
    assert info["client"] == {"netns": "vbt1", "address": "10.213.1.2"}
    assert info["source"].startswith("10.213.1.1:/")
    assert targets["loopback"].info["client"]["address"] == "127.0.0.1"
    assert "nolock" in info["mount"]["options"]
    assert any("netem" in line and "delay 1ms" in line for line in checks["qdisc"])
    assert checks["nfs_mounts"] == [] and checks["exports"] == []
    assert checks["netns"] == []
