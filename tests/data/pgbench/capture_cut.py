"""Capture pgbench with the power cut's commit ledger, its server killed mid-run (as a cut
kills it), into tests/data/pgbench/VERSION/cut-ledger.*:

    .venv/bin/python tests/data/pgbench/capture_cut.py BINDIR   (as root)

A throwaway cluster (services/postgres.py), pgbench -i -s 1, the ledger's table, then
pgbench -c 2 -T 20 -P 1 -l with the ledger's script (workloads/pgbench_ledger.py) for
about 3 s before the server is SIGKILLed (CrashHooks.crash); the server started again
(CrashHooks.start) and the ledger's rows read back. Files: .cmd, .stdout, .stderr,
.exitcode, .txlog (pgbench's -l log), .rows (`psql -At` of the ledger's query), .cut
(the kill's time, epoch seconds).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from volbench.services import postgres
from volbench.system import journal, proc
from volbench.system.host import pgfind
from volbench.targets.base import Built
from volbench.workloads import pgbench_ledger as ledger

HERE = Path(__file__).resolve().parent
CYCLE = 4242


def main(bindir: Path) -> None:
    version = pgfind.version(bindir / "postgres")
    out = HERE / version.split()[0]
    out.mkdir(exist_ok=True)
    work = Path("/tmp/capture-pg-cut")
    work.mkdir(exist_ok=True)
    (work / "data").mkdir(exist_ok=True)
    built = Built("capture", "directory", path=work / "data")
    config = postgres.make_config({}, str(bindir))
    with journal.opened("capture cut") as jrnl, jrnl.scope() as scope, \
            postgres.cluster(config, scope, built, work) as server:
        assert server.crash_hooks is not None
        conn = ["-h", str(server.sockdir), "-p", str(server.port), "-U", "postgres"]
        proc.run([str(bindir / "pgbench"), *conn, "-i", "-s", "1", "-q", "postgres"],
                 timeout=300)
        psql = [str(bindir / "psql"), "-X", "-At", *conn, "-d", "postgres", "-c"]
        proc.run([*psql, ledger.CREATE], timeout=60)
        script = work / "ledger.sql"
        script.write_text(ledger.script("tpcb-like"))
        argv = ["pgbench", *conn, "-n", "-c", "2", "-j", "1", "-T", "20", "-P", "1",
                "-f", "ledger.sql", *ledger.defines(CYCLE), "-l",
                f"--log-prefix={work / 'txlog'}", "postgres"]
        running = proc.start([str(bindir / "pgbench"), *argv[1:]], log=work / "pgbench.out",
                             cwd=work)
        time.sleep(3.0)
        cut = time.time()
        server.crash_hooks.crash()
        code = running.popen.wait(timeout=60)
        facts = server.crash_hooks.start()
        rows = proc.run([*psql, ledger.query(CYCLE)], timeout=60).stdout
        text = (work / "pgbench.out").read_text()
        logs = sorted(work.glob("txlog.*"))
        (out / "cut-ledger.cmd").write_text(
            " ".join(argv) + f"\n# server SIGKILLed ~3 s in; restarted: {facts['ready_s']} s\n")
        (out / "cut-ledger.exitcode").write_text(f"{code}\n")
        stdout = "".join(ln + "\n" for ln in text.splitlines() if not ln.startswith(
            ("progress:", "pgbench: error")))
        (out / "cut-ledger.stdout").write_text(stdout)
        (out / "cut-ledger.stderr").write_text("".join(ln + "\n" for ln in text.splitlines()
                                                       if ln.startswith(("progress:",
                                                                         "pgbench: error"))))
        (out / "cut-ledger.txlog").write_text(logs[0].read_text())
        (out / "cut-ledger.rows").write_text(rows)
        (out / "cut-ledger.cut").write_text(f"{cut:.6f}\n")
    for path in sorted(work.iterdir()):
        if path.is_file():
            path.unlink()
    print(f"captured into {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
