"""Bad input through the real command line: one clear line, never a traceback.

Each case runs the CLI entry function (or, where a second user is needed, the
installed command as a subprocess) and asserts on the exact line printed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import DATA, directory_fio_file, tool
from volbench.cli import doctor
from volbench.cli import main as cli
from volbench.cli.main import main
from volbench.store import schema
from volbench.store.db import Store

FIO = DATA / "fio/3.33/randread-4k-qd16.json"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().err.splitlines()


@pytest.fixture
def results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A results database holding two imported fio runs, checkpointed into one file."""
    db = tmp_path / "r.db"
    assert main(["import", "--tool", "fio", "--target", "t", "--db", str(db), str(FIO),
                 str(DATA / "fio/3.33/randread-4k-qd16-jsonplus.json")]) == 0
    capsys.readouterr()
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = DELETE")  # everything in the file itself
    con.close()
    return db


def fio_with(tmp_path: Path, **read: object) -> Path:
    data = json.loads(FIO.read_text())
    data["jobs"][0]["read"].update(read)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


# -- import: values no disk measures ---------------------------------------------------------

def test_import_refuses_nan_and_infinity_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fio_with(tmp_path, iops=float("nan"), bw_bytes=float("inf"))
    assert "NaN" in path.read_text() and "Infinity" in path.read_text()
    db = tmp_path / "i.db"
    code, err = run_cli(capsys, "import", "--tool", "fio", "--target", "t", "--db", str(db),
                        str(path))
    assert (code, err) == (1, [f"volbench: cannot read fio output from {path}: iops (op=read): "
                               "nan is not a finite number; fix or remove that value, or "
                               "leave the file out"])
    with Store(db) as store:
        assert store.experiments() == []


@pytest.mark.parametrize("value", ["inf", "nan", "9" * 400])
def test_the_bonnie_importer_refuses_non_finite_values_too(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.csv"
    path.write_text((DATA / "bonnie++/2.00a/csv-s64m-n1.stdout").read_text()
                    .replace(",2709,99,", f",{value},99,"))
    code, err = run_cli(capsys, "import", "--tool", "bonnie++", "--target", "t", "--db",
                        str(tmp_path / "i.db"), str(path))
    shown = "nan" if value == "nan" else "inf"
    assert (code, err) == (1, [f"volbench: cannot read bonnie++ output from {path}: bw "
                               f"(test=putc, cpu_bound=yes): {shown} is not a finite number; "
                               "fix or remove that value, or leave the file out"])


def test_import_of_a_400_digit_number_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.json"
    path.write_text(FIO.read_text().replace('"total_ios" : ', '"total_ios" : ' + "9" * 400, 1))
    code, err = run_cli(capsys, "import", "--tool", "fio", "--target", "t", "--db",
                        str(tmp_path / "i.db"), str(path))
    assert (code, err) == (1, [
        f"volbench: cannot read fio output from {path}: unexpected content (OverflowError: "
        "int too large to convert to float); is this fio output? (fio writes JSON with "
        "--output-format=json or json+)"])


def test_import_refuses_absurd_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    path = fio_with(tmp_path, iops=1e300)
    code, err = run_cli(capsys, "import", "--tool", "fio", "--target", "t", "--db",
                        str(tmp_path / "i.db"), str(path))
    assert (code, err) == (1, [f"volbench: cannot read fio output from {path}: iops (op=read): "
                               "1e+300 is larger than any real measurement; fix or remove "
                               "that value, or leave the file out"])


@pytest.mark.parametrize("target", ["..", "", "a" * 65])
def test_import_refuses_an_unsafe_target_name(target: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(capsys, "import", "--tool", "fio", "--target", target, "--db",
                        str(tmp_path / "i.db"), str(FIO))
    assert code == 1 and len(err) == 1 and err[0].startswith("volbench: --target ")
    assert err[0].endswith("; name it like xfs-1disk")


# -- report: a stored bad value is left out, with a warning ---------------------------------

def test_a_report_skips_a_stored_infinite_value_naming_the_run(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    con = sqlite3.connect(results)
    with con:
        con.execute("UPDATE metrics SET value = 9e999 WHERE name = 'iops' AND run_id = 1")
    con.close()
    assert main(["report", "--db", str(results), "--details"]) == 0
    out = capsys.readouterr().out
    assert ("run 1 (t / fio, repetition 1): iops (op=read): inf is not a finite number; left "
            "out of this report (the stored value cannot be a measurement: re-run or delete "
            "that run)") in out
    iops_rows = [line for line in out.splitlines() if line.split()[2:3] == ["iops"]]
    assert len(iops_rows) == 1 and " 1 " in iops_rows[0]  # one run of two left


def test_the_json_report_stays_strict_json_with_a_stored_infinite_value(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    con = sqlite3.connect(results)
    with con:  # as Python's json wrote it into databases before imports refused it
        con.execute("UPDATE metrics_json SET metrics = replace(metrics, ?, ?) WHERE run_id = 1",
                    ('"name":"iops","value":', '"name":"iops","value":Infinity,"was":'))
        stored = con.execute("SELECT metrics FROM metrics_json WHERE run_id = 1").fetchone()[0]
    con.close()
    assert "Infinity" in stored
    assert main(["report", "--db", str(results), "--format", "json"]) == 0

    def refuse(token: str) -> None:
        raise AssertionError(f"not strict JSON: {token}")

    doc = json.loads(capsys.readouterr().out, parse_constant=refuse)
    iops = [m for m in doc["runs"][0]["metrics"] if m["name"] == "iops"]
    assert iops and all(m["value"] is None for m in iops)


# -- report never modifies the database -----------------------------------------------------

def fingerprint(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def test_report_leaves_an_empty_file_as_it_was(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    before = fingerprint(empty)
    code, err = run_cli(capsys, "report", "--db", str(empty))
    assert (code, err) == (1, [f"volbench: {empty} holds no experiments yet; run one with "
                               "volbench run"])
    assert fingerprint(empty) == before == (b"", before[1])


def test_report_and_compare_leave_a_database_as_it_was(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(results)
    for argv in (["report", "--db", str(results)], ["report", "--db", str(results), "--list"],
                 ["report", "--db", str(results), "--format", "json"],
                 ["compare", str(results), str(results)]):
        assert main(argv) == 0
    capsys.readouterr()
    assert fingerprint(results) == before


def test_report_of_an_older_schema_upgrades_a_copy_not_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "v1.db"
    con = sqlite3.connect(db)
    first = schema.MIGRATIONS[0]
    assert isinstance(first, str)
    con.executescript(first)
    con.execute("INSERT INTO experiments (name, spec_hash, document, environment, seed, "
                "created, status) VALUES ('old', 'h', '{}', '{}', NULL, 0, 'done')")
    con.execute("PRAGMA user_version = 1")  # as a volbench of schema 1 left it
    con.commit()
    con.close()
    before = fingerprint(db)
    assert main(["report", "--db", str(db), "--list"]) == 0
    assert "old" in capsys.readouterr().out
    assert fingerprint(db) == before


def test_report_of_a_missing_database_says_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(capsys, "report", "--db", str(tmp_path / "none.db"))
    assert (code, err) == (1, [f"volbench: no results database at {tmp_path / 'none.db'}; run "
                               "an experiment first (volbench run) or point --db at one"])
    assert not (tmp_path / "none.db").exists()


# -- damaged and read-only databases ---------------------------------------------------------

def corrupt(db: Path) -> None:
    """Overwrite every page but the first (the header and schema stay readable)."""
    size = db.stat().st_size
    with db.open("r+b") as f:
        for page in range(1, size // 4096):
            f.seek(page * 4096)
            f.write(b"\xde\xad\xbe\xef" * 1024)


DAMAGED = ("is damaged (database disk image is malformed); restore it from a copy, or see "
           "what is wrong with: sqlite3 {db} 'PRAGMA integrity_check'")


def test_a_damaged_database_is_one_line_from_report_and_run(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt(results)
    line = f"volbench: {results} " + DAMAGED.format(db=results)
    assert run_cli(capsys, "report", "--db", str(results)) == (1, [line])
    exp = tmp_path / "e.yaml"
    exp.write_text(f"targets: [{{name: d, type: directory, path: {tmp_path}}}]\n"
                   "workloads: [{name: w, tool: dd, count: 1}]\nrepeat: 1\n"
                   "drop_caches: false\n")
    assert run_cli(capsys, "run", str(exp), "--db", str(results), "--quiet") == (1, [line])


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's tmp_path is private to root)."""
    path = Path("/var/tmp/volbench-tests") / f"ro-{os.getpid()}"
    path.mkdir(parents=True)
    path.chmod(0o777)
    yield path
    subprocess.run(["rm", "-rf", "--", str(path)], check=True, timeout=30)


@pytest.mark.root
def test_a_read_only_database_is_one_line(results: Path, shared_dir: Path) -> None:
    """As an unprivileged user (root may write any file): run cannot store, report reads."""
    db = shared_dir / "r.db"
    db.write_bytes(results.read_bytes())
    db.chmod(0o444)
    exp = shared_dir / "e.yaml"
    exp.write_text(f"targets: [{{name: d, type: directory, path: {shared_dir}}}]\n"
                   "workloads: [{name: w, tool: dd, count: 1}]\nrepeat: 1\n"
                   f"drop_caches: false\nworkdir: {shared_dir / 'work'}\n")
    env = {**os.environ, "VOLBENCH_STATE_DIR": str(shared_dir / "state")}

    def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               sys.executable, "-m", "volbench.cli.main", *argv], cwd=shared_dir,
                              env=env, capture_output=True, text=True, timeout=120)

    done = as_nobody("run", str(exp), "--db", str(db), "--quiet")
    assert (done.returncode, done.stderr) == (1, f"volbench: cannot write to {db}: permission "
                                                 "denied; give --db a file you may write, or "
                                                 "fix its permissions\n")
    done = as_nobody("report", "--db", str(db), "--list")
    assert (done.returncode, done.stderr) == (0, "")
    assert "import:t" in done.stdout
    # A WAL database in a folder the user may not write (no shared-memory file possible).
    closed = shared_dir / "closed"
    closed.mkdir(mode=0o755)
    wal = closed / "r.db"
    wal.write_bytes(results.read_bytes())
    con = sqlite3.connect(wal)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    con.close()
    before = fingerprint(wal)
    done = as_nobody("report", "--db", str(wal), "--list")
    assert (done.returncode, done.stderr) == (0, "")
    assert "import:t" in done.stdout
    assert fingerprint(wal) == before


# -- experiment files through the CLI --------------------------------------------------------

@pytest.mark.parametrize(("content", "problem"), [
    (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "line 1: not UTF-8 text (byte 0xff at offset 8) (an "
     "experiment file is YAML text saved as UTF-8)"),
    (b"a: " + b"[" * 5000 + b"]" * 5000, "line 1, column 67: not valid YAML: nested more than "
     "64 levels deep (check indentation and quoting there)"),
    (b"targets: [{name: " + b"a" * 300 + b", type: directory, path: /var/tmp}]\n"
     b"workloads: [{name: w, tool: fio}]\n", "targets[0].name: is 300 characters long, at most "
     "64 are allowed (rename it, e.g. xfs-1disk)"),
    (b"targets: [{name: d, type: directory, path: /var/tmp}]\n"
     b"workloads: [{name: w, tool: fio}]\nworkdir: /\n", "workdir: / is a system directory; "
     "volbench creates and removes files there (use a directory of its own, e.g. /srv/bench "
     "or /var/tmp/volbench)"),
])
def test_a_broken_experiment_file_is_one_problem_line(
        content: bytes, problem: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.yaml"
    path.write_bytes(content)
    for command in ("plan", "run"):
        assert run_cli(capsys, command, str(path)) == (
            1, [f"volbench: {path}: 1 problem(s)", f"  {problem}"])


def test_workdir_etc_passwd_through_the_cli(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("targets: [{name: d, type: directory, path: /var/tmp}]\n"
                    "workloads: [{name: w, tool: fio}]\nworkdir: /etc/passwd\n")
    code, err = run_cli(capsys, "run", str(path))
    assert code == 1
    assert err[0] == f"volbench: {path}: 2 problem(s)"
    assert err[2] == ("  workdir: /etc/passwd exists and is not a directory (name a "
                      "directory; volbench creates it if missing)")


def test_runs_beyond_the_bound_are_refused_by_the_option() -> None:
    """A subprocess with a timeout: without the bound, plan would enumerate for ever."""
    done = subprocess.run(
        [sys.executable, "-m", "volbench.cli.main", "plan", "--runs", "100000000"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "volbench plan: error: argument --runs: must be 1 to 1000, got 100000000")


# -- the last resort ---------------------------------------------------------------------------

def test_an_unexpected_exception_is_one_line_and_a_saved_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def broken(workdir: Path) -> list[doctor.Check]:
        raise ZeroDivisionError("division by zero, forced by the test")

    monkeypatch.setattr(doctor, "checks", broken)
    code, err = run_cli(capsys, "doctor")
    assert code == cli.EXIT_BUG
    assert len(err) == 1
    saved = sorted((tmp_path / "state").glob("crash-*.txt"))
    assert len(saved) == 1
    assert err[0] == (f"volbench: internal error (ZeroDivisionError: division by zero, forced "
                      f"by the test); the full traceback is in {saved[0]}. This is a bug in "
                      "volbench: please report it with that file and the command you ran")
    text = saved[0].read_text()
    assert "command: volbench doctor" in text
    assert "Traceback (most recent call last)" in text and "in broken" in text


def test_import_of_a_file_that_never_ends_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "import", "--tool", "dd", "--target", "t", "--db",
                   str(tmp_path / "i.db"), "/dev/zero") == (
        1, ["volbench: the file to import /dev/zero is a character device, not a regular "
            "file; give the path of a file to import"])


def test_a_histogram_count_with_400_digits_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the property test: an exact integer too large for a float."""
    data = json.loads((DATA / "fio/3.33/randread-4k-qd16-jsonplus.json").read_text())
    bins = data["jobs"][0]["read"]["clat_ns"]["bins"]
    bins[next(iter(bins))] = 10**400
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    code, err = run_cli(capsys, "import", "--tool", "fio", "--target", "t", "--db",
                        str(tmp_path / "i.db"), str(path))
    assert code == 1 and len(err) == 1
    assert err[0].endswith("histogram: a 401-digit number is larger than any real "
                           "measurement; fix or remove that value, or leave the file out")


def test_doctor_lists_tools_and_kernel_features(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for name in ("root", "loop devices", "blkio throttling", "device-mapper", "KVM", "tool fio"):
        assert any(line[4:].startswith(name) for line in out.splitlines()), name


def test_a_run_with_failed_runs_says_how_to_run_them_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool("fio")
    exp = directory_fio_file(tmp_path, "rw: no-such-mode")
    db = tmp_path / "r.db"
    assert main(["run", str(exp), "--db", str(db), "--quiet"]) != 0
    assert "1 failed; results in" in capsys.readouterr().out
    assert main(["run", str(exp), "--db", str(db), "--quiet", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "no runs, 1 already done" in out and "--retry-failed" not in out
    assert main(["run", str(exp), "--db", str(db), "--quiet", "--retry-failed"]) != 0
    out = capsys.readouterr().out
    assert "1 failed; results in" in out
    assert out.rstrip().endswith("failed runs can be run again (once the cause is fixed) with "
                                 "--retry-failed")
