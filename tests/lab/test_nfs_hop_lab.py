"""NFS across an emulated network hop, in the lab VM (seed 000's same-zone NFS).

One boot, shared with tests/lab/test_curves_lab.py (the `nfs_hop_boot` fixture in
tests/lab/conftest.py). The guest makes two client namespaces joined to it by veth pairs
(tests/hostlab.py) with `tc netem` delaying each direction by DELAY, then runs one
experiment: fio random 4k reads at queue depth 1 on the exported disk itself, on an NFS
mount over loopback, on an NFS mount made from a client namespace (its RPC traffic
crosses the delayed link), and from fio servers in both namespaces at once, each on
its own mount of the same export. The latency penalty of the hop must show, and be
the delay's size; teardown must leave no mount, export or namespace.

Paired, same-moment design (issue 35). The hop's cost is measured against two references
taken under the same CPU conditions as it:
- loopback, in short alternating slices: REPEAT interleaved rounds of RUNTIME runs, so each
  round's hop run sits beside a loopback run seconds apart; the check is on the median of
  the rounds' differences;
- the link's own round trip, from `ping` across the same delayed veth pair during the whole
  experiment: the emulated guest's timers fire late when the host is short of CPU, and
  netem's delay is a timer, so on a loaded host a round trip costs more than the 2 ms set
  (8.6 ms median seen at a load average of 10). The hop may cost no more than 1.5 of the
  fast round trips the link showed at that moment, plus HOP_SLACK_S for the RPC's own
  extra (veth, the client's namespace).
Both on the fast end of the latencies (the 5th percentile: see the test's doc). The lower
bound needs no reference: netem never delivers a packet before its delay, so even the
fastest read through the hop is 0.8 of the 2 ms set slower than the fastest on loopback.
Spread (bench/test_bounds.py, 2026-11-28): see `test_the_hop_costs_one_round_trip_per_io`.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from bounds import within
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
    "runtime": "2s",
}
REPEAT = 4
HOP_SLACK_S = 0.0005
PING_INTERVAL_S = 0.2
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
    "repeat": REPEAT,
    "order": "interleaved",
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
    # The link's own round trip while they run: ping across the first pair (-D: times).
    result["run_codes"] = {}
    pinger = proc.start(["ip", "netns", "exec", hosts[0].netns, "ping", "-D", "-n", "-i",
                         sys.argv[4], hosts[0].outside], log=out / "ping.txt")
    try:
        for name in sys.argv[5:]:
            result["run_codes"][name] = cli.main(["run", str(out / f"{name}.yaml"),
                                                  "--db", f"/srv/{name}.db", "--quiet"])
            shutil.copyfile(f"/srv/{name}.db", out / f"{name}.db")
    finally:
        pinger.stop()
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
        runs: dict[str, list[Any]] = {}
        for r in store.runs([row.id]):
            runs.setdefault(r.target, []).append(r)
    text = (out / "ping.txt").read_text()
    return {"checks": checks, "targets": targets, "runs": runs, "pings": pings_of(text),
            "ping_text": text}


_PING = re.compile(r"^\[(\d+\.\d+)\] .* time=([\d.]+) ms")


def pings_of(text: str) -> list[tuple[float, float]]:
    """(when, round trip in seconds) of each answered ping in `ping -D` output."""
    return [(float(m[1]), float(m[2]) / 1000) for line in text.splitlines()
            if (m := _PING.match(line))]


def metric(run: Any, name: str, **tags: str) -> float:
    (value,) = [
        m.value
        for m in run.metrics
        if m.name == name
        and m.tags.get("op") == "read"
        and all(m.tags.get(k) == v for k, v in tags.items())
    ]
    return float(value)


def low_quantile(values: list[float], share: float = 0.05) -> float:
    """The value below which `share` of them lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@pytest.mark.lab
@pytest.mark.slow
def test_the_hop_costs_one_round_trip_per_io(hop: dict[str, Any]) -> None:
    """Each 4 KiB read at queue depth 1 waits for one RPC: the hop adds one round trip.

    Judged on the fast end of each run's latencies (fio's 5th percentile), not the mean: a
    host short of CPU adds scheduling waits to every path, and they do not simply add up
    (on a busy host a loopback read took 11.98 ms on average, the hop's 13.31 ms, while the
    link alone took 8.58 ms by ping: the link's wait overlapped waits the loopback path
    also had), but the fastest reads are those that waited for no CPU, where the delay
    netem adds to every packet stands alone. Bounds (module doc): 0.8 × the 2 ms set <
    median over rounds of (hop − loopback at p5) < 1.5 × the link's own fast round trip
    (ping, p5 during the hop's runs) + HOP_SLACK_S.
    Before (2026-11-27, a fresh busy machine, one run each, means, no reference): loopback
    4.39 ms, hop 11.85 ms, 7.46 ms added against a fixed bound of 5 ms."""
    checks, runs = hop["checks"], hop["runs"]
    assert checks["run_code"] == 0
    assert {str(r.status) for rs in runs.values() for r in rs} == {"ok"}
    assert set(runs) == {"store", "loopback", "hop", "hop2", "clients"}
    assert {n: len(rs) for n, rs in runs.items()} == dict.fromkeys(runs, REPEAT)
    rtt = 2 * DELAY_MS / 1000
    fast = {n: {r.repetition: metric(r, "clat_p5") for r in runs[n]} for n in ("loopback", "hop")}
    added = statistics.median(fast["hop"][rep] - fast["loopback"][rep] for rep in fast["hop"])
    link = [t for when, t in hop["pings"]
            if any(r.started <= when <= r.ended for r in runs["hop"])]
    assert len(link) >= 5, (hop["pings"][:5], hop["ping_text"][:600])
    mean = {n: statistics.median(metric(r, "lat_mean") for r in runs[n])
            for n in ("loopback", "hop")}
    reference = (f"p5 loopback {statistics.median(fast['loopback'].values()) * 1e3:.2f} ms, "
                 f"hop {statistics.median(fast['hop'].values()) * 1e3:.2f} ms; means "
                 f"{mean['loopback'] * 1e3:.2f} and {mean['hop'] * 1e3:.2f} ms; link by ping "
                 f"p5 {low_quantile(link) * 1e3:.2f} ms, median "
                 f"{statistics.median(link) * 1e3:.2f} ms ({len(link)} during the hop's runs)")
    within("nfs hop: added per I/O at p5 (s)", added, low=0.8 * rtt,
           high=1.5 * low_quantile(link) + HOP_SLACK_S, reference=reference)
    # The link's own round trip needs no reference: netem's delay is a floor.
    within("nfs hop: link's fast round trip (s)", low_quantile(link), low=rtt,
           reference=reference)
    # Fewer reads a second through the hop: its mean is the loopback's plus the delay,
    # less whatever of it overlapped waits for the CPU (the ratio is 0.3-0.5 on a quiet
    # host, where the delay dominates; only the direction holds on any host).
    within("nfs hop: mean latency over loopback's", mean["hop"] / mean["loopback"], low=1.0,
           reference=reference)
    for host in ("c1", "c2"):
        each = statistics.median(metric(r, "clat_p5", host=host) for r in runs["clients"])
        within(f"nfs hop: {host}'s extra latency at p5 (s)",
               each - statistics.median(fast["loopback"].values()), low=0.8 * rtt,
               reference=reference)


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
