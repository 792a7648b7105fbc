"""Issue 34's bad inputs, each one line naming the problem, the right exit code, no
traceback, nothing lost: files volbench reads that are not regular files or are too
large (a pgbench script or an fio include of /dev/zero was read whole into memory), a
URL libpq cannot read (exit 70), `export -o` into a missing folder (exit 70), an imported
negative rate (stored as an ok run), `at: .nan` ("cannot be negative"), a device or a
directory as the database ("damaged"), a misspelt history name or metric (exit 0, "no
measured runs match"), 200 000 empty fio jobs (97 s to refuse)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from support import make_db, make_run
from volbench.cli.main import main

FIO_JSON = Path(__file__).resolve().parents[1] / "data/fio/3.33/randread-4k-qd16.json"


def cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err, err
    return code, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) >= 1
    return "\n".join(lines)


def experiment(tmp_path: Path, workload: dict[str, object]) -> Path:
    doc = {"name": "bad", "workdir": str(tmp_path / "w"),
           "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
           "workloads": [workload]}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def in_time(fn: Callable[[], tuple[int, str]], seconds: float = 20) -> tuple[int, str]:
    """`fn`'s answer, failing the test if it takes longer (a FIFO would block for ever)."""
    got: list[tuple[int, str]] = []
    worker = threading.Thread(target=lambda: got.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert got, f"took longer than {seconds} s"
    return got[0]


@pytest.mark.parametrize("form", [["-f", "/dev/zero"], ["-f/dev/zero@2"], ["--file=/dev/zero"]])
def test_a_pgbench_script_that_is_a_device_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], form: list[str]) -> None:
    file = experiment(tmp_path, {"name": "p", "tool": "pgbench", "options": form})
    code, err = in_time(lambda: cli(capsys, ["plan", str(file)]))
    assert code == 1, err
    assert "the pgbench script /dev/zero is a character device, not a regular file" in err


def test_pgbench_scripts_that_are_a_fifo_a_folder_or_too_large_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "s.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.sql"
    with big.open("wb") as f:
        f.truncate(2 * 1024**2)  # sparse: nothing to read if it is refused first
    for script, said in ((fifo, "is a FIFO, not a regular file"),
                         (tmp_path, "is a directory, not a regular file"),
                         (big, "is 2 MiB, larger than the 1 MiB a pgbench script may be")):
        file = experiment(tmp_path, {"name": "p", "tool": "pgbench", "script": str(script)})
        code, err = in_time(lambda f=file: cli(capsys, ["plan", str(f)]))
        assert code == 1 and said in err, err


@pytest.mark.parametrize("include", ["/dev/zero", "FIFO"])
def test_an_fio_include_that_is_not_a_file_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], include: str) -> None:
    if include == "FIFO":
        include = str(tmp_path / "inc.fifo")
        os.mkfifo(include)
    job = tmp_path / "job.fio"
    job.write_text(f"[j]\nrw=read\nsize=4M\ninclude {include}\n")
    file = experiment(tmp_path, {"name": "f", "tool": "fio", "jobfile": str(job)})
    code, err = in_time(lambda: cli(capsys, ["plan", str(file)]))
    assert code == 1 and f"the fio job file {include} is a" in err, err
    assert "not a regular file" in err


@pytest.mark.parametrize(("jobs", "said"), [
    (200_000, "larger than the 1 MiB a fio job file may be"),
    (5_000, "more than 4096 jobs; fio runs at most 4096")])
def test_two_hundred_thousand_empty_fio_jobs_are_refused_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: int, said: str) -> None:
    job = tmp_path / "many.fio"
    job.write_text("".join(f"[j{i}]\n" for i in range(jobs)))
    file = experiment(tmp_path, {"name": "f", "tool": "fio", "jobfile": str(job)})
    began = time.monotonic()
    code, err = cli(capsys, ["plan", str(file)])
    took = time.monotonic() - began
    assert code == 1 and said in err, err
    assert took < 10, f"{took:.1f} s to refuse"  # 97 s before


def test_an_unreadable_query_in_a_url_is_one_line_not_an_internal_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = cli(capsys, ["report", "--list", "--db",
                             "postgresql://u@h/db?application_name=%ff"])
    assert code == 2 and "--db postgresql://u@h/db?application_name=%ff:" in err, err


def test_export_into_a_missing_folder_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = make_db(tmp_path / "r.db", [make_run("a", {"iops": 100.0}, 1, started=1000.0)])
    before = db.read_bytes()
    out = tmp_path / "missing" / "dir" / "x.ndjson"
    code, err = cli(capsys, ["export", "--db", str(db), "-o", str(out)])
    assert code == 1 and one_line(err) == (
        f"volbench: cannot write the export to {out}: the folder {out.parent} does not "
        f"exist; create it (mkdir -p {out.parent}) or give another -o")
    assert db.read_bytes() == before


@pytest.mark.parametrize(("path", "value", "name"), [(("read", "iops"), -5, "iops"),
                                                     (("read", "bw_bytes"), -1.5, "bw")])
def test_an_imported_negative_rate_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], path: tuple[str, str],
        value: float, name: str) -> None:
    doc = json.loads(FIO_JSON.read_text())
    doc["jobs"][0][path[0]][path[1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    db = tmp_path / "i.db"
    code, err = cli(capsys, ["import", "--tool", "fio", "--target", "t", "--db", str(db),
                             str(bad)])
    assert code == 1 and f"{name} (op=read): {value:g} is negative" in err, err
    with sqlite3.connect(db) as con:  # nothing stored
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_nan_time_is_said_to_be_no_number(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "e.yaml"
    file.write_text(f"name: n\nworkdir: {tmp_path}/w\ntargets: [{{name: d, type: directory, "
                    f"path: {tmp_path}}}]\nworkloads: [{{name: f, tool: fio, faults: "
                    "[{at: .nan, action: slow, target: d}]}]\n")
    code, err = cli(capsys, ["plan", str(file)])
    assert code == 1 and "not a number (.nan)" in err and "negative" not in err, err


@pytest.mark.parametrize(("argv", "said"), [
    (["report", "--db", "{dir}"], "{dir} is a directory, not a results database"),
    (["report", "--db", "/dev/null"], "/dev/null is a character device, not a results "
                                      "database"),
    (["pull", "--to", "/dev/null", "{db}"], "/dev/null is a character device, not a results "
                                            "database"),
    (["import", "--tool", "fio", "--target", "t", "--db", "{dir}", str(FIO_JSON)],
     "{dir} is a directory, not a results database"),
])
def test_what_is_not_a_database_is_named_not_called_damaged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    db = make_db(tmp_path / "r.db", [make_run("a", {"iops": 100.0}, 1, started=1000.0)])
    values = {"dir": str(tmp_path), "db": str(db)}
    code, err = cli(capsys, [a.format(**values) for a in argv])
    assert code == 1 and said.format(**values) in err, err
    assert "damaged" not in err


def test_a_misspelt_history_name_or_metric_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = make_db(tmp_path / "r.db", [make_run("a", {"iops": 100.0 + i}, i,
                                              started=1000.0 + i) for i in (1, 2)])
    code, err = cli(capsys, ["history", "--db", str(db), "--experiment", "nosuch"])
    assert code == 1 and "no experiment named 'nosuch'" in err and "experiments there:" in err
    code, err = cli(capsys, ["history", "--db", str(db), "--metric", "iop"])
    assert code == 1 and "no metric 'iop'" in err and "did you mean 'iops'?" in err, err
    code, err = cli(capsys, ["history", "--db", str(db), "--series", "nokey"])
    assert code == 1 and "no experiment with series: nokey" in err, err


def test_an_import_of_a_fifo_or_a_device_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    for source, said in ((fifo, "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        code, err = in_time(lambda s=source: cli(capsys, [
            "import", "--tool", "fio", "--target", "t", "--db", str(tmp_path / "i.db"),
            str(s)]))
        assert code == 1 and f"the file to import {source} {said}, not a regular" in err, err
