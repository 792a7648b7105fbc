"""The command line: every command has help, bad input gives one clear line, contracts hold."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import DATA
from volbench.cli.main import main, parser
from volbench.store.db import Store


def commands() -> list[str]:
    sub = next(a for a in parser()._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


def test_the_contract_commands_exist() -> None:
    assert {"run", "plan", "report", "import", "cleanup", "doctor"} <= set(commands())


@pytest.mark.parametrize("command", commands())
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: volbench {command}")
    assert len(out.splitlines()) > 3


def test_report_without_a_database_says_what_to_do(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(tmp_path / "none.db")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (f"volbench: no results database at {tmp_path / 'none.db'}; run an "
                           "experiment first (volbench run) or point --db at one")


def test_a_broken_experiment_exits_1_listing_every_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets: [{name: a, type: loopdsk}]\nworkloads: [{name: w, tool: fio, "
                   "iodeth: 4}]\n")
    assert main(["plan", str(bad)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"volbench: {bad}: 2 problem(s)",
                   "  targets[0].type: unknown target type 'loopdsk' (did you mean 'loopdisk'?)",
                   "  workloads[0].iodeth: unknown field (did you mean 'iodepth'?)"]


def test_plan_prints_runs_commands_and_duration(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "e.yaml"
    exp.write_text("name: p\ntargets: [{name: d, type: directory, path: " + str(tmp_path) +
                   "}]\nworkloads: [{name: w, tool: fio, rw: [read, write], runtime: 5s}]\n"
                   "repeat: 2\n")
    assert main(["plan", str(exp)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("experiment p: 1 target(s), 2 case(s), 4 run(s), order interleaved")
    assert out[1].startswith("estimated duration: ")
    runs = [line for line in out if line.strip()[:1].isdigit()]
    assert len(runs) == 4
    assert "--rw=read" in runs[0] and "--rw=write" in runs[1] and " r2 " in runs[2]


def test_plan_shows_a_path_outside_the_target_as_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "e.yaml"
    exp.write_text("name: p\ntargets: [{name: d, type: directory, path: " + str(tmp_path) +
                   "}]\nworkloads: [{name: w, tool: fio, options: {filename: /dev/loop0}}]\n"
                   "repeat: 1\n")
    assert main(["plan", str(exp)]) == 0
    out = capsys.readouterr().out
    assert "   1   r1 d                (cannot run: fio workload w on target d: 1 problem(s))" \
        in out
    assert ("warning: this plan cannot run here yet: p: 1 problem(s)\n  workloads[0].options"
            ".filename: '/dev/loop0': is outside the target") in out


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """`volbench plan FILE | head`: the pipe closes while plan still writes."""
    exp = tmp_path / "e.yaml"
    exp.write_text("name: p\ntargets: [{name: d, type: directory, path: " + str(tmp_path) +
                   "}]\nworkloads: [{name: w, tool: fio, rw: [read, write], runtime: 1s}]\n"
                   "repeat: 500\n")  # 1000 runs: far more than a pipe buffer holds
    child = subprocess.Popen([sys.executable, "-m", "volbench.cli.main", "plan", str(exp)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline().startswith(b"experiment p:")
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 1
    assert err == ""


def test_import_fio_outputs_of_several_versions(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "i.db"
    files = [DATA / "fio/3.33/randread-4k-qd16.json",
             DATA / "fio/3.33/randread-4k-qd16-jsonplus.json"]
    assert main(["import", "--tool", "fio", "--target", "old-box", "--db", str(db),
                 *map(str, files)]) == 0
    assert "imported 2 run(s) of fio as target old-box" in capsys.readouterr().out
    assert main(["import", "--tool", "fio", "--target", "older", "--db", str(db),
                 str(DATA / "fio/2.17/pkb-randread-randwrite-16k-groups.json")]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "json", "--experiment", "all"]) == 0
    report = json.loads(capsys.readouterr().out)
    runs = report["runs"]
    assert [r["target"] for r in runs] == ["old-box", "old-box", "older"]
    assert runs[0]["params"] == {"bs": "4k", "direct": 1, "iodepth": 16, "ioengine": "libaio",
                                 "rw": "randread", "runtime": 2.0, "size": "128M"}
    iops = [m for m in runs[0]["metrics"] if m["name"] == "iops"]
    raw = json.loads(files[0].read_text())["jobs"][0]["read"]["iops"]
    assert iops == [{"name": "iops", "value": raw, "unit": "op/s", "tags": {"op": "read"}}]


def test_import_of_something_else_names_the_file(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "notes.txt"
    shutil.copy(DATA / "dd/coreutils-9.1/read-256m-direct.stderr", bogus)
    assert main(["import", "--tool", "fio", "--target", "x", "--db", str(tmp_path / "d.db"),
                 str(bogus)]) == 1
    err = capsys.readouterr().err
    assert str(bogus) in err and "is this fio output?" in err
    with Store(tmp_path / "d.db") as store:  # all or nothing: no experiment was stored
        assert store.experiments() == []


def test_fields_prints_a_kinds_declared_fields_with_defaults_and_bounds(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fields", "btrfs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "type: btrfs — btrfs over several loop disks (data single/raid0/raid1)"
    assert out[2].split() == ["field", "default", "takes", "meaning"]
    assert out[3].split() == ["disks", "2", "whole", "number:", "1", "…", "8", "loop", "disks",
                              "in", "the", "filesystem"]
    assert any(line.split()[:4] == ["data", "single", "text:", "single"] for line in out)
    assert main(["fields", "fio"]) == 0
    fio = capsys.readouterr().out
    assert any(line.split()[:3] == ["runtime", "10s", "axis"] for line in fio.splitlines())


def test_fields_lists_every_kind_and_names_a_typo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fields"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "lvm" in listed and "bonnie++" in listed and len(listed) == len(set(listed))
    assert main(["fields", "pgbnch"]) == 1
    assert capsys.readouterr().err == ("volbench: 'pgbnch' is neither a target type nor a "
                                       "workload tool (did you mean 'pgbench'?)\n")


SHARED = {"run": ["x.yaml"], "plan": ["x.yaml"], "report": [], "import":
          ["--tool", "fio", "--target", "t", "f.json"], "lab run": ["x.yaml"]}


@pytest.mark.parametrize("command", sorted(SHARED))
def test_shared_options_mean_the_same_in_every_command(command: str) -> None:
    words = command.split()
    args = parser().parse_args([*words, *SHARED[command]])
    if hasattr(args, "db"):
        assert args.db == Path("volbench.db")
    if command in ("run", "plan", "lab run"):
        assert args.runs is None and args.file == Path("x.yaml")
        assert parser().parse_args([*words, *SHARED[command], "--runs", "4"]).runs == 4
        with pytest.raises(SystemExit):
            parser().parse_args([*words, *SHARED[command], "--runs", "0"])
    if command in ("run", "lab run"):
        assert args.resume is False and args.retry_failed is False


def test_each_shared_option_is_declared_once() -> None:
    source = (Path(__file__).parents[2] / "src/volbench/cli/main.py").read_text()
    for option in ("--db", "--runs", "--resume", "--retry-failed"):
        assert f'add_argument("{option}"' not in source, f"use cli/options.py for {option}"
    assert source.count('add_argument("file"') <= 1  # doctor's FILE means something else
