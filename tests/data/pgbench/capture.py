"""Capture pgbench's outputs of one PostgreSQL installation into tests/data/pgbench/VERSION/.

    .venv/bin/python tests/data/pgbench/capture.py BINDIR [CASE…]   (as root)

With CASE names (keys of CASES), only those are captured (on a database initialised at
scale 2 first, not captured): the others keep their files.

A throwaway cluster (volbench's own, services/postgres.py) in /tmp/capture-pg-<major>,
then each case below; .cmd holds the command (programs named without their directory)
and the setup, .stdout/.stderr/.exitcode the streams apart. The cluster always goes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from volbench.services import postgres
from volbench.system import journal, proc
from volbench.system.host import pgfind
from volbench.targets.base import Built

HERE = Path(__file__).resolve().parent
CASES = {
    "version": ["--version"],
    "init-s2": ["-i", "-s", "2"],
    "init-s2-server-side-dtGvp": ["-i", "-s", "2", "-I", "dtGvp"],
    "run-c4-j2-T3-P1": ["-c", "4", "-j", "2", "-T", "3", "-P", "1"],
    "run-c2-t50": ["-c", "2", "-t", "50"],
    "run-select-only-S": ["-c", "2", "-T", "2", "-S"],
    "run-r-per-statement": ["-c", "2", "-T", "2", "-r"],
    # A load-curve step as volbench runs one (--rate), with a latency limit.
    "run-rate-latency-limit": ["-c", "2", "-j", "1", "-T", "3", "-R", "300", "-L", "2", "-P",
                               "1"],
    # Steps without data generation: 12 then prints neither rows nor times.
    "init-s2-steps-dtvp": ["-i", "-s", "2", "-I", "dtvp"],
    # Inits that fail (captured with CASE names, so on a database already initialised):
    # generating the data again works, then adding the primary keys it already has fails
    # (rows and times printed before the ERROR); and a tablespace that does not exist.
    "error-init-primary-keys-exist": ["-i", "-s", "2", "-I", "gp"],
    "error-init-missing-tablespace": ["-i", "-s", "2", "--tablespace=missing"],
    # Per-statement latencies of a script that ends with COMMIT (the long option), of two
    # builtin scripts (one table each), and with commits that do not wait for their WAL
    # (synchronous_commit off for pgbench's sessions: CASE_ENV).
    "run-report-per-command-commit": ["-c", "2", "-T", "2", "--report-per-command", "-f",
                                      str(HERE / "commit-script.sql")],
    "run-r-two-scripts": ["-c", "2", "-T", "2", "-r", "-b", "tpcb-like", "-b", "simple-update"],
    "run-r-synchronous-commit-off": ["-c", "2", "-T", "2", "-r"],
}
CASE_ENV = {"run-r-synchronous-commit-off": {"PGOPTIONS": "-c synchronous_commit=off"}}
PRE_INIT = "# the database was initialised with pgbench -i -s 2 before (not captured)\n"


def main(bindir: Path, only: list[str]) -> None:
    install = pgfind.locate(bindir)
    version = pgfind.version(install.program("pgbench"))
    out = HERE / version
    out.mkdir(exist_ok=True)
    work = Path(f"/tmp/capture-pg-{pgfind.major(version)}")
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    (work / "svc").mkdir()
    work.chmod(0o755)
    config = postgres.make_config({}, str(bindir))
    with journal.opened("capture") as jrnl, jrnl.scope() as scope, \
            postgres.cluster(config, scope, Built("capture", "directory", work / "data"),
                             work / "svc") as server:
        conn = ["-h", str(server.sockdir), "-p", str(server.port), "-U", postgres.PG_USER]
        proc.run([install.program("psql"), *conn, "-d", "postgres", "-c",
                  "CREATE DATABASE bench"], timeout=60)
        setup = (f"# setup: throwaway PostgreSQL {server.info['server_version']} cluster "
                 f"(volbench's initdb options, unix socket only) from {bindir} (data directory "
                 f"under {work}), client and server on the same 2-core Debian 12 machine; "
                 f"pgbench {version}")
        if only:  # the runs need the tables that the skipped init-s2 case would make
            proc.run([install.program("pgbench"), *conn, "-i", "-s", "2", "bench"],
                     timeout=300, cwd=work)
        for case, args in CASES.items():
            if only and case not in only:
                continue
            argv = [*(conn if case != "version" else []), *args,
                    *(["bench"] if case != "version" else [])]
            env = CASE_ENV.get(case, {})
            done = proc.run([install.program("pgbench"), *argv], timeout=300, check=False,
                            cwd=work, env={"LC_ALL": "C", **env})
            (out / f"{case}.stdout").write_text(done.stdout)
            (out / f"{case}.stderr").write_text(done.stderr)
            (out / f"{case}.exitcode").write_text(f"{done.returncode}\n")
            (out / f"{case}.cmd").write_text(
                proc.command_line([*(f"{k}={v}" for k, v in env.items()), "pgbench", *argv])
                + "\n" + setup + "\n"
                f"# exit code {done.returncode} (also in {case}.exitcode); stdout and stderr "
                "kept separately\n" + (PRE_INIT if only else ""))
    shutil.rmtree(work, ignore_errors=True)
    print(f"captured {len(only or CASES)} cases into {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2:])
