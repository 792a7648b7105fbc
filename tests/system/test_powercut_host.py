"""The power cut's host-side pieces on real processes (the cut itself needs the lab):
the forked probe writer with its ledger, and PostgreSQL killed and started again on
its data directory with pgbench's commit ledger counted (a process crash with fsync on
and the disk untouched: every acknowledged commit must come back)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pytest

from support import tool
from volbench.faults import probe
from volbench.services import postgres
from volbench.system import journal, proc
from volbench.targets.base import Built
from volbench.workloads import pgbench_ledger as ledger

pytestmark = pytest.mark.root


def test_forked_probe_writes_acknowledges_and_reads_back(workdir: Path) -> None:
    spec = probe.ProbeSpec(workdir / "probe", workdir / "ledger", cycle=77, slots=64)
    probe.prepare(spec)
    writer = proc.fork_call(partial(probe.write, spec), name="probe")
    time.sleep(1.5)
    assert writer.poll() is None  # writing until its I/O fails
    writer.stop()
    found = probe.check(spec, time.time())
    # More writes than slots: the ring wrapped, every slot's newest write is there.
    assert found.acked > 64 and found.slots_checked == 64
    assert (found.acked_lost, found.torn, found.corrupt) == (0, 0, 0)
    # A slot put back to an older write of the cycle is a lost acknowledged write.
    newest = {slot: seq for seq, slot, _ in probe.ledger_lines(spec.ledger)}
    with open(spec.path, "r+b") as f:
        f.seek(5 * probe.BLOCK)
        f.write(probe.block(77, newest[5] - 64, 5))
    assert probe.check(spec, time.time()).stale == 1


def test_postgres_killed_and_started_again_keeps_every_acknowledged_commit(
        workdir: Path) -> None:
    for name in ("pgbench", "initdb", "postgres", "psql"):
        tool(name)
    data = workdir / "target"
    data.mkdir()
    built = Built("dir", "directory", path=data)
    with journal.opened("crash test") as jrnl, jrnl.scope() as scope, \
            postgres.cluster(postgres.make_config({}), scope, built, workdir) as server:
        assert server.crash_hooks is not None
        conn = ["-h", str(server.sockdir), "-p", str(server.port), "-U", "postgres"]
        psql = [str(server.bindir / "psql"), "-X", "-At", *conn, "-d", "postgres", "-c"]
        proc.run([str(server.bindir / "pgbench"), *conn, "-i", "-s", "1", "-q", "postgres"],
                 timeout=300)
        proc.run([*psql, ledger.CREATE], timeout=60)
        (workdir / "ledger.sql").write_text(ledger.script("simple-update"))
        bench = proc.start([str(server.bindir / "pgbench"), *conn, "-n", "-c", "2", "-T", "60",
                            "-f", "ledger.sql", *ledger.defines(9), "-l",
                            "--log-prefix=tx", "postgres"], log=workdir / "out", cwd=workdir)
        time.sleep(2.0)
        cut = time.time()
        before = server.crash_hooks
        before.crash()
        assert bench.popen.wait(timeout=60) == 2  # aborted: its server is gone
        facts = before.start()
        assert facts["first_query_s"] > 0 and facts["pid"] != server.pid
        logs = [p.read_text() for p in workdir.glob("tx.*")]
        counted = ledger.compare(ledger.acked(logs, cut),
                                 ledger.rows(proc.run([*psql, ledger.query(9)], timeout=60).stdout))
        assert counted.acked > 50 and counted.lost == 0
    assert not list(data.iterdir())  # the cluster, started again, still went at the end
