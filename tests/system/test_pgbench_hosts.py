"""pgbench from several client hosts against one server: the experiment fields, the
driver's argv, results per host and in total (captured in network namespaces), and
whole runs on this machine's test hosts: two and three namespaces against one cluster
on a loop disk, a host without a route, pg_hba.conf admitting only the clients, a
host over real SSH, and nothing left running or listening afterwards."""

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
from volbench.core.errors import ExperimentError, ParseError
from volbench.core.model import Metric, Parsed, RunResult, Status
from volbench.engine import kinds
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.jobs import multipgbench
from volbench.remote.hosts import HostSpec
from volbench.services import pgclients, postgres
from volbench.stats.histogram import percentile_from_histogram
from volbench.store.db import Store
from volbench.system import journal, proc
from volbench.targets.base import Built
from volbench.workloads import pgbench, pgbench_hosts
from volbench.workloads import pgbench_parse as parsing
from volbench.workloads.base import LostHosts, RunContext, RunOutput

PG = DATA / "multipgbench" / "pgbench-15.20"
IP = DATA / "ip" / "6.1.0"


def capture(case: str) -> dict[str, str]:
    """A captured driver run as the runner hands it over: the JSON and the log files."""
    outputs = {pgbench_hosts.RESULT: (PG / f"{case}.multipgbench.json").read_text()}
    for path in PG.glob(f"{case}.pgbench_txlog-*"):
        outputs[path.name[len(case) + 1 :]] = path.read_text()
    return outputs


def parse(case: str) -> Parsed:
    return pgbench_hosts.parse_output(capture(case), 1.0, False)


def value(metrics: tuple[Metric, ...] | list[Metric], name: str, **tags: str) -> float:
    found = [m.value for m in metrics if m.name == name and dict(m.tags) == tags]
    assert len(found) == 1 and found[0] is not None, (name, tags, found)
    return found[0]


def hosts_of(metrics: tuple[Metric, ...]) -> set[str]:
    return {m.tags["host"] for m in metrics if "host" in m.tags}


# -- parsers on captured output --------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "source"),
    [
        ("route-get-veth", "10.213.1.1"),
        ("route-get-from-netns", "10.213.1.2"),
        ("route-get-local", "127.0.0.1"),
        ("route-get-gateway", "192.0.2.2"),
        ("route-get-unreachable", None),
    ],
)
def test_the_source_address_of_a_route(case: str, source: str | None) -> None:
    assert pgclients.route_source((IP / f"{case}.stdout").read_text()) == source


def test_proc_net_addresses_are_little_endian_words() -> None:
    assert pgclients.proc_net_address("0101D50A") == "10.213.1.1"
    assert pgclients.proc_net_address("00000000") == "0.0.0.0"
    assert pgclients.proc_net_address("00000000000000000000000001000000") == "::1"


def test_three_hosts_per_host_and_in_total() -> None:
    outputs = capture("multi-3hosts-rate")
    parsed = pgbench_hosts.parse_output(outputs, 1.0, False)
    metrics = parsed.metrics
    data = json.loads(outputs[pgbench_hosts.RESULT])
    assert hosts_of(metrics) == {"a", "b", "c", "all"}
    # Each host's numbers are its own pgbench summary's.
    raw = {
        h["name"]: {
            "tps": float(re.search(r"^tps = ([\d.]+)", h["stdout"], re.M).group(1)),  # type: ignore[union-attr]
            "tx": float(re.search(r"processed: (\d+)", h["stdout"]).group(1)),  # type: ignore[union-attr]
        }
        for h in data["hosts"]
    }
    for host, got in raw.items():
        assert value(metrics, "tps", host=host) == got["tps"]
        assert value(metrics, "transactions", host=host) == got["tx"]
        # Every transaction of the host is in its own log.
        assert value(metrics, "logged_transactions", host=host) == got["tx"]
    assert value(metrics, "tps", host="all") == pytest.approx(sum(r["tps"] for r in raw.values()))
    total = value(metrics, "transactions", host="all")
    assert total == sum(r["tx"] for r in raw.values())
    # The server counted the same transactions (pgbench_history rows).
    assert value(metrics, "server_transactions") == total
    weighted = sum(value(metrics, "latency_avg", host=h) * raw[h]["tx"] for h in raw) / total
    assert value(metrics, "latency_avg", host="all") == pytest.approx(weighted)
    lags = [value(metrics, "schedule_lag_max", host=h) for h in raw]
    assert value(metrics, "schedule_lag_max", host="all") == max(lags)
    # Percentiles of all transactions, from the merged histogram, equal those of the
    # logs read as one.
    every = parsing.parse_txlogs([t for n, t in outputs.items() if n.startswith("pgbench_txlog")])
    for p in (50.0, 99.0):
        assert value(metrics, f"latency_p{p:g}", host="all") == percentile_from_histogram(
            every.bins, p
        )
    (merged,) = [h for h in parsed.histograms if h.tags == {"host": "all"}]
    assert sum(n for _, n in merged.bins) == total
    series = {s.tags["host"]: dict(s.points) for s in parsed.series if s.name == "tps"}
    assert series["all"] and all(
        total_tps == pytest.approx(sum(series[h][t] for h in raw))
        for t, total_tps in series["all"].items()
    )
    # The barrier started the hosts together: their first transactions are close.
    assert 0 <= value(metrics, "start_skew", host="all") < 0.5


def test_one_host_is_its_own_total() -> None:
    metrics = parse("multi-1host").metrics
    for name in ("tps", "transactions", "latency_avg", "latency_stddev", "latency_p99"):
        assert value(metrics, name, host="all") == pytest.approx(value(metrics, name, host="a"))
    assert not [m for m in metrics if m.name == "start_skew"]


def test_a_host_without_a_route_is_named_and_the_others_kept() -> None:
    with pytest.raises(LostHosts) as err:
        parse("multi-1unreachable")
    assert list(err.value.lost) == ["c"]
    assert str(err.value).startswith(
        "cannot read pgbench output from multi-host run: host c: pgbench exited with code 1: "
        "pgbench could not connect: connection to server at"
    )
    assert "Network is unreachable" in err.value.lost["c"]
    kept = err.value.partial
    assert isinstance(kept, Parsed)
    assert hosts_of(kept.metrics) == {"a", "b"}  # no total without c
    both = value(kept.metrics, "transactions", host="a") + value(
        kept.metrics, "transactions", host="b"
    )
    assert value(kept.metrics, "server_transactions") == both


def test_a_host_refused_by_pg_hba_is_named() -> None:
    with pytest.raises(LostHosts) as err:
        parse("multi-hba-refused")
    assert list(err.value.lost) == ["b"]
    assert "the server refused the host's address" in err.value.lost["b"]
    assert 'no pg_hba.conf entry for host "10.213.2.2"' in err.value.lost["b"]
    assert hosts_of(err.value.partial.metrics) == {"a"}


def test_split_fetched_logs() -> None:
    text = "@@m@@ log.1\n0 1 2\n0 2 3\n@@m@@ log.1.1\n1 1 5\n"
    assert multipgbench.split_fetched(text, "@@m@@") == {
        "log.1": "0 1 2\n0 2 3\n",
        "log.1.1": "1 1 5\n",
    }


def test_an_ordinary_failed_run_is_not_parsed() -> None:
    # partial_results is on for the multi-host driver; a local pgbench that failed is
    # still only its exit code, as before.
    spec = pgbench.PgbenchSpec("p", "pgbench")
    out = (DATA / "pgbench" / "15" / "run-c4-j2-T3-P1.stdout").read_text()
    with pytest.raises(ParseError):
        pgbench.KIND.parse_output(spec, {"mode": "run"}, RunOutput({"stdout": out}, exit_code=2))
    assert pgbench.KIND.partial_results


# -- the experiment file ---------------------------------------------------------------


def doc(workload: dict[str, Any], hosts: list[Any] | None = None) -> dict[str, Any]:
    return {
        "name": "x",
        "hosts": hosts
        if hosts is not None
        else ["local", {"name": "load1", "address": "127.0.0.1"}],
        "targets": [{"name": "t", "type": "directory", "path": "/tmp"}],
        "workloads": [{"name": "p", "tool": "pgbench", **workload}],
    }


def problems(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ExperimentError) as err:
        parse_document(document)
    return [str(p) for p in err.value.problems]


def test_clients_from_names_hosts_with_a_did_you_mean() -> None:
    assert problems(doc({"clients_from": ["laod1", "load1"]})) == [
        "workloads[0].clients_from: 'laod1' is not a host name (did you mean 'load1'?)"
    ]
    found = problems(doc({"clients_from": ["a"]}, hosts=[]))
    assert found == [
        "workloads[0].clients_from: 'a' is not a host name (add a hosts: section listing it)"
    ]


def test_clients_from_field_problems() -> None:
    found = problems(
        doc({"clients_from": ["load1", "load1"], "mode": ["run", "init"], "listen": "0.0.0.0"})
    )
    assert any("listed twice" in p for p in found)
    assert any("mode: init" in p for p in found)
    assert any("listen: 0.0.0.0 would listen on every address" in p for p in found)
    assert problems(doc({"listen": "10.0.0.1"})) == [
        "workloads[0].listen: only means something with clients_from (remove it)"
    ]


def test_clients_are_per_host() -> None:
    exp = parse_document(doc({"clients_from": ["local", "load1"], "clients": [4, 60]}))
    spec = exp.workloads[0]
    assert isinstance(spec, pgbench.PgbenchSpec)
    assert [h.name for h in spec.client_hosts] == ["local", "load1"]
    assert spec.cluster.as_dict()["max_connections"] == str(2 * 60 + 10)
    plain = parse_document(doc({"clients": [4, 60]})).workloads[0]
    assert isinstance(plain, pgbench.PgbenchSpec)
    params = {"mode": "run", "scale": 10}
    # Another set of client hosts is another cluster (another pg_hba.conf).
    assert pgbench.service_key(spec, params) != pgbench.service_key(plain, params)
    assert pgbench.setup_key(spec, params).startswith(pgbench.service_key(spec, params))


def _service(tmp_path: Path) -> dict[str, str]:
    entries = [
        {
            "name": n,
            "host": HostSpec(n, f"10.0.{i}.2", f"ns{i}").to_json(),
            "control": None,
            "server": f"10.0.{i}.1",
            "clock": {"offset_s": 0.0},
        }
        for i, n in enumerate(("a", "b"), start=1)
    ]
    return {
        "host": "/sock",
        "port": "5999",
        "user": "postgres",
        "workdir": str(tmp_path),
        "facts": str(tmp_path / "facts.json"),
        pgclients.CLIENTS: json.dumps(entries),
    }


def test_one_driver_process_runs_every_hosts_pgbench(tmp_path: Path) -> None:
    script = tmp_path / "mine.sql"
    script.write_text("SELECT 1;\n")
    exp = parse_document(
        doc(
            {
                "clients_from": ["local", "load1"],
                "clients": 3,
                "duration": "5s",
                "script": str(script),
            }
        )
    )
    spec = exp.workloads[0]
    ctx = RunContext(Built("t", "directory", tmp_path), tmp_path / "run", _service(tmp_path))
    params = pgbench.cases(spec)[0]
    inv = pgbench.KIND.command(spec, params, ctx)
    assert inv.argv[1:3] == ("-m", "volbench.jobs.multipgbench") and not inv.throttled
    driver = json.loads(inv.files[Path(inv.argv[3])])
    for i, host in enumerate(driver["hosts"], start=1):
        argv = host["argv"]
        assert argv[:5] == ["pgbench", "-h", f"10.0.{i}.1", "-p", "5999"]
        assert f"--log-prefix=pgbench_txlog-{i}-{host['name']}" in argv
        assert "--no-vacuum" in argv and argv[argv.index("-c") + 1] == "3"
        # The script's checked copy in the run directory (issue 34), written with the
        # driver's spec before the driver starts, is what goes to the hosts.
        (copy,) = host["upload"]
        assert copy == str(tmp_path / "run" / "scripts" / "1-mine.sql")
        assert inv.files[Path(copy)] == script.read_text()
    (prepare,) = driver["prepare"]
    assert prepare[-2:] == ["-c", "TRUNCATE pgbench_history"] and "/sock" in prepare
    assert driver["count"] is None  # a custom script adds no history rows
    assert inv.timeout > driver["timeout"] >= 5
    assert inv.output_globs == ("pgbench_txlog-*",)
    # `volbench plan` (no service yet) shows what each host runs.
    shown = pgbench.KIND.command(spec, params, RunContext(ctx.built, ctx.rundir, {"port": "<p>"}))
    assert shown.argv[:3] == ("pgbench", "-h", "<server-address>")
    assert "--no-vacuum" in shown.argv
    plain = pgbench.PgbenchSpec("p", "pgbench")
    local = pgbench.KIND.command(plain, {**params, "script": "tpcb-like"}, ctx)
    assert local.argv[0] == "pgbench" and "-n" not in local.argv
    assert "--log-prefix=pgbench_txlog" in local.argv


# -- whole runs on this machine's test hosts ---------------------------------------------


@pytest.fixture
def lab() -> Iterator[list[hostlab.NetnsHost]]:
    tool("ip")
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)
    need(os.geteuid() == 0, "needs root")
    with hostlab.namespaces(3) as hosts:
        yield hosts
        for host in hosts:
            assert not hostlab.processes_in(host.netns), (
                f"a process outlived its run in {host.netns}"
            )
    ours = {h.outside for h in hosts} | {h.address for h in hosts}
    assert not [s for s in hostlab.tcp_listening() if s[0] in ours], "a listener outlived its run"


def hosts_section(lab: list[hostlab.NetnsHost]) -> list[dict[str, Any]]:
    return [
        {"name": n, "netns": h.netns, "address": h.address}
        for n, h in zip("abc", lab, strict=False)
    ]


def run(document: dict[str, Any], db: Path) -> list[RunResult]:
    outcome = run_experiment(parse_document(document), db=db)
    with Store(db) as store:
        return store.runs([outcome.experiment_id], outputs=True, histograms=True)


def pg_left(workdir: Path) -> list[str]:
    """pgbench clients of our hosts and servers with their data under `workdir`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if ("pgbench" in argv and " 10.213." in argv) or cwd.startswith(str(workdir)):
            found.append(f"{entry.name}: {argv}")
    return found


class Listeners(threading.Thread):
    """Every TCP listener that appears while a run goes on (polled from outside)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.before = hostlab.tcp_listening()
        self.seen: set[tuple[str, int]] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.seen |= hostlab.tcp_listening() - self.before
            time.sleep(0.05)


def tpcb(clients_from: list[str], **more: Any) -> dict[str, Any]:
    return {
        "name": "from-" + "".join(clients_from),
        "tool": "pgbench",
        "scale": 1,
        "clients": 2,
        "duration": "2s",
        "clients_from": clients_from,
        "checkpoint": False,
        **more,
    }


@pytest.mark.root
def test_two_and_three_hosts_against_one_cluster(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    document = {
        "name": "mpg",
        "workdir": str(workdir),
        "repeat": 1,
        "hosts": hosts_section(lab),
        "targets": [{"name": "disk", "type": "loopdisk", "size": "512M"}],
        "workloads": [tpcb(["a", "b"]), tpcb(["a", "b", "c"])],
    }
    watch = Listeners()
    watch.start()
    try:
        runs = run(document, tmp_path / "r.db")
    finally:
        watch.done.set()
        watch.join()
    assert [r.status for r in runs] == [Status.OK, Status.OK], [r.error for r in runs]
    ports = set()
    for r in runs:
        names = list(r.workload[len("from-") :])
        per_host = {h: value(r.metrics, "tps", host=h) for h in names}
        for host, v in per_host.items():
            # Needs no reference: a floor for a real number, far below any tps seen.
            within(f"pgbench hosts: host {host} tps (floor)", v, low=5)
        assert value(r.metrics, "tps", host="all") == pytest.approx(sum(per_host.values()))
        total = value(r.metrics, "transactions", host="all")
        assert total == sum(value(r.metrics, "transactions", host=h) for h in names)
        assert value(r.metrics, "server_transactions") == total
        service = r.annotations["service"]
        tcp = service["tcp"]
        wanted = [lab["abc".index(h)].outside for h in names]
        assert tcp["listen_addresses"] == wanted
        assert tcp["listening"] == sorted(f"{a}:{tcp['port']}" for a in wanted)
        assert tcp["pg_hba"] == [
            "local all postgres peer map=volbench", "local all volbench_bench peer map=volbench"
        ] + [f"host all volbench_bench {lab['abc'.index(h)].address}/32 trust" for h in names]
        # The server was seen listening on those addresses, and nowhere else.
        assert {a for a, p in watch.seen if p == tcp["port"]} == set(wanted)
        ports.add(tcp["port"])
        for h in names:
            clock = service["pgbench_clients"][h]["clock"]
            assert abs(clock["offset_s"]) <= clock["uncertainty_s"] + 0.005
        assert service["settings"]["max_connections"] == str(max(100, 2 * len(names) + 10))
    assert len(ports) == 2  # two workloads with other clients: two clusters
    assert not pg_left(workdir)
    assert not list((tmp_path / "state" / "journals").glob("*.jsonl"))


@pytest.mark.root
def test_one_listen_address_and_a_host_that_cannot_reach_it(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    a, b, c = lab
    # Every host is told to use a's end of its pair; b gets a route there through its
    # own pair (this machine delivers to its own address), c has none.
    proc.run(["ip", "-n", b.netns, "route", "add", f"{a.outside}/32", "via", b.outside], timeout=30)
    document = {
        "name": "lost",
        "workdir": str(workdir),
        "repeat": 1,
        "hosts": hosts_section(lab),
        "targets": [{"name": "disk", "type": "loopdisk", "size": "512M"}],
        "workloads": [tpcb(["a", "b", "c"], duration="1s", listen=a.outside)],
    }
    (r,) = run(document, tmp_path / "l.db")
    assert r.status is Status.FAILED
    assert "host c: pgbench exited with code 1: pgbench could not connect" in r.error
    assert "Network is unreachable" in r.error
    assert "host a" not in r.error and "host b" not in r.error
    assert hosts_of(r.metrics) == {"a", "b"}
    kept = value(r.metrics, "transactions", host="a") + value(r.metrics, "transactions", host="b")
    assert kept > 0 and value(r.metrics, "server_transactions") == kept
    service = r.annotations["service"]
    assert service["tcp"]["listening"] == [f"{a.outside}:{service['tcp']['port']}"]
    clients = service["pgbench_clients"]
    assert {h: clients[h]["source"] for h in "abc"} == {
        "a": a.address,
        "b": b.address,
        "c": c.address,
    }
    assert clients["b"]["source_found"] == "route"
    assert clients["c"]["source_found"].startswith(f"no route to {a.outside} on the host")
    assert not pg_left(workdir)


@pytest.mark.root
def test_the_cluster_admits_only_the_client_hosts(
    lab: list[hostlab.NetnsHost], workdir: Path
) -> None:
    a, b, _ = lab
    target = workdir / "t"
    target.mkdir()
    tcp = postgres.TcpAccess((a.outside,), (a.address,))
    with (
        journal.opened("test") as jrnl,
        jrnl.scope() as scope,
        postgres.cluster(
            postgres.ClusterConfig(),
            scope,
            Built("t", "directory", target),
            workdir / "svc",
            tcp=tcp,
        ) as server,
    ):
        assert pgclients.tcp_listeners(server.pid) == {(a.outside, server.port)}

        def psql(*prefix: str, host: str, user: str = "volbench_bench") -> proc.Completed:
            return proc.run(
                [
                    *prefix,
                    "psql",
                    "-X",
                    "-At",
                    "-h",
                    host,
                    "-p",
                    str(server.port),
                    "-U",
                    user,
                    "-d",
                    "postgres",
                    "-c",
                    "SELECT 1",
                ],
                timeout=30,
                check=False,
            )

        # The client host gets in as the benchmark role (which may not use the
        # maintenance database: past pg_hba.conf), never as the superuser (issue 34).
        admitted = psql("ip", "netns", "exec", a.netns, host=a.outside)
        assert 'permission denied for database "postgres"' in admitted.stderr, admitted
        superuser = psql("ip", "netns", "exec", a.netns, host=a.outside, user="postgres")
        assert "no pg_hba.conf entry" in superuser.stderr, superuser
        # From this machine (source a.outside): not a client, refused.
        refused = psql(host=a.outside)
        assert refused.returncode != 0 and "no pg_hba.conf entry" in refused.stderr
        # Not listening on loopback, nor reachable from another namespace.
        assert psql(host="127.0.0.1").returncode != 0
        assert psql("ip", "netns", "exec", b.netns, host=a.outside).returncode != 0
    assert not pg_left(workdir)


@pytest.mark.root
def test_a_client_host_over_ssh(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    tool("ssh")
    tool("ssh-keygen")
    need(Path(hostlab.SSHD).exists(), "openssh-server is not installed")
    script = tmp_path / "select.sql"
    script.write_text(
        "\\set aid random(1, 100000 * :scale)\n"
        "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    )
    with hostlab.sshd(lab[1], tmp_path / "ssh") as ssh:
        hosts = [
            {"name": "near", "netns": lab[0].netns, "address": lab[0].address},
            {
                "name": "far",
                "address": ssh.host.address,
                "ssh": {"user": "root", "key": str(ssh.key), "known_hosts": str(ssh.known_hosts)},
            },
        ]
        document = {
            "name": "ssh",
            "workdir": str(workdir),
            "repeat": 1,
            "hosts": hosts,
            "targets": [{"name": "disk", "type": "loopdisk", "size": "512M"}],
            "workloads": [tpcb(["near", "far"], duration="1s", script=str(script))],
        }
        (r,) = run(document, tmp_path / "s.db")
        assert r.status is Status.OK, r.error
        # Needs no reference: a floor for a real number, far below any tps seen.
        within("pgbench ssh: far tps (floor)", value(r.metrics, "tps", host="far"), low=5)
        assert value(r.metrics, "logged_transactions", host="far") == value(
            r.metrics, "transactions", host="far"
        )
        far = json.loads(r.outputs[pgbench_hosts.RESULT])["hosts"][1]
        # The script was copied to the host's private directory, which is gone now.
        used = far["argv"][far["argv"].index("-f") + 1]
        assert used.startswith("/tmp/.volbench-pgbench-") and not Path(used).exists()
        info = r.annotations["service"]["pgbench_clients"]["far"]
        assert info["environment"]["tools"]["pgbench"].startswith("pgbench (PostgreSQL) 15")
    assert not hostlab.tagged_processes()
    assert not pg_left(workdir)


@pytest.mark.root
@pytest.mark.slow
def test_cleanup_after_a_killed_volbench_stops_every_client(
    lab: list[hostlab.NetnsHost], workdir: Path, tmp_path: Path
) -> None:
    tool("ssh")
    tool("ssh-keygen")
    need(Path(hostlab.SSHD).exists(), "openssh-server is not installed")
    with hostlab.sshd(lab[1], tmp_path / "ssh") as ssh:
        hosts = [
            {"name": "near", "netns": lab[0].netns, "address": lab[0].address},
            {
                "name": "far",
                "address": ssh.host.address,
                "ssh": {"user": "root", "key": str(ssh.key), "known_hosts": str(ssh.known_hosts)},
            },
        ]
        document = {
            "name": "kill",
            "workdir": str(workdir),
            "repeat": 1,
            "hosts": hosts,
            "targets": [{"name": "disk", "type": "loopdisk", "size": "512M"}],
            "workloads": [tpcb(["near", "far"], duration="60s")],
        }
        exp = tmp_path / "e.json"
        exp.write_text(json.dumps(document))
        script = (
            "import sys; from pathlib import Path; from volbench.engine.experiment import load; "
            "from volbench.engine.runner import run_experiment; "
            "run_experiment(load(Path(sys.argv[1])), db=Path(sys.argv[2]))"
        )
        before = set(Path("/tmp").glob(".volbench-pgbench-*"))
        child = proc.start(
            [sys.executable, "-c", script, str(exp), str(tmp_path / "k.db")],
            log=tmp_path / "child.log",
        )
        try:
            deadline = time.monotonic() + 120
            # The measured run is on: the remote pgbench carries its tag.
            while not (hostlab.tagged_processes() and pg_left(workdir)):
                assert child.alive() and time.monotonic() < deadline, child.output()
                time.sleep(0.1)
            time.sleep(1)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.stop()
            removed, errors = _cleanup_after_kill(tmp_path / "state" / "journals")
        assert errors == []
        assert any(r.startswith("remote-process") for r in removed)
        assert any(r.startswith("remote-tree") for r in removed)
        assert any(r.startswith("postgres") for r in removed)
        assert not hostlab.tagged_processes()
    assert set(Path("/tmp").glob(".volbench-pgbench-*")) <= before
    assert not pg_left(workdir)


def _cleanup_after_kill(journals: Path) -> tuple[list[str], list[str]]:
    """`volbench cleanup` once every journal's owner is gone. The driver dies with
    volbench (parent-death signal) but is reaped by PID 1 a moment later, and a zombie
    still counts as a live owner to cleanup."""
    owners = [json.loads(j.read_text().splitlines()[0])["pid"] for j in journals.glob("*.jsonl")]
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() for pid in owners) and time.monotonic() < deadline:
        time.sleep(0.1)
    return kinds.cleanup()
