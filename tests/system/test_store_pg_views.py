"""Issue 24: the SQL views of docs/store.md, queried through psql on a real server."""

from __future__ import annotations

import re
import subprocess

import pytest

from support import ROOT, make_run, tool
from volbench.store import location
from volbench.store.db import Store
from volbench.system.host import fingerprint

pytestmark = pytest.mark.root


def doc_queries() -> list[str]:
    text = (ROOT / "docs" / "store.md").read_text()
    return re.findall(r"```sql\n(.*?)```", text, re.S)


def psql(url: str, sql: str) -> list[list[str]]:
    done = subprocess.run([tool("psql"), "--no-psqlrc", "-X", "-A", "-t", "-F", "|",
                           "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split("|") for line in done.stdout.splitlines() if line]


def test_every_documented_query_runs_and_answers(pg_url: str) -> None:
    with Store(location.parse(pg_url)) as store:
        for host, kernel in (("h1", "6.1"), ("h2", "6.12")):
            exp = store.begin_experiment(f"nightly-{kernel}", host, {}, {"hostname": host}, 1,
                                         series="nfs-tier" if host == "h2" else "")
            fp = {"host.kernel": kernel}
            digest = store.save_fingerprint(fp, fingerprint.digest(fp))
            for rep in range(3):
                store.save_run(exp, make_run("t", {"iops": 1000.0 + rep}, rep,
                                             started=1.7e9 + rep + (host == "h2") / 2),
                               fingerprint=digest)
            store.set_status(exp, "done")
    queries = doc_queries()
    assert len(queries) == 5
    series, summary, hosts, keyed, kernels = (psql(pg_url, q) for q in queries)
    assert [row[1:] for row in series] == [["h1", "1000"], ["h2", "1000"], ["h1", "1001"],
                                           ["h2", "1001"], ["h1", "1002"], ["h2", "1002"]]
    assert sorted(row[2] for row in summary) == ["h1", "h2"]
    assert {row[-1] for row in summary} == {"1001.0"} and {row[-2] for row in summary} == {"3"}
    assert sorted((row[0], row[1], row[2]) for row in hosts) == [("h1", "1", "3"),
                                                                 ("h2", "1", "3")]
    assert [(row[0], row[2], row[3], row[4]) for row in keyed] == [
        ("nfs-tier", "nightly-6.12", "h2", "1001.0")]
    assert kernels == [["nightly-6.1", "h1", "6.1"], ["nightly-6.12", "h2", "6.12"]]
