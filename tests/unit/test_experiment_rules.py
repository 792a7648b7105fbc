"""Accepted-but-wrong experiment files are refused at validation: names, paths, bounds,
duplicate keys, nesting, encodings (docs/experiments.md lists the rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bounds import CpuTimed
from volbench.config import fieldrules
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import load, parse_text

FIO = "workloads: [{name: w, tool: fio, runtime: 1s}]\n"
DIR = "targets: [{name: d, type: directory, path: /var/tmp}]\n"
FIX_DIR = "(use a directory of its own, e.g. /srv/bench or /var/tmp/volbench)"
NAME_RULE = ("must start with a letter or digit and use only letters, digits, '-', '_' and '.'"
             " (rename it, e.g. xfs-1disk)")


def problems(text: str) -> list[str]:
    with pytest.raises(ExperimentError) as info:
        parse_text(text, "exp.yaml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(("name", "expected"), [
    ("..", f"targets[0].name: '..' {NAME_RULE}"),
    (".", f"targets[0].name: '.' {NAME_RULE}"),
    ("''", "targets[0].name: must not be empty (rename it, e.g. xfs-1disk)"),
    ("a/b", f"targets[0].name: 'a/b' {NAME_RULE}"),
    ("-x", f"targets[0].name: '-x' {NAME_RULE}"),
    ("a" * 300, "targets[0].name: is 300 characters long, at most 64 are allowed "
                "(rename it, e.g. xfs-1disk)"),
])
def test_unsafe_target_names_are_refused(name: str, expected: str) -> None:
    assert problems(f"targets: [{{name: {name}, type: directory, path: /var/tmp}}]\n"
                    + FIO) == [expected]


def test_the_longest_allowed_name_is_accepted() -> None:
    name = "a" * fieldrules.NAME_MAX
    exp = parse_text(f"targets: [{{name: {name}, type: directory, path: /var/tmp}}]\n" + FIO)
    assert exp.targets[0].name == name


@pytest.mark.parametrize("name", ["..", "a b", "x" * 65])
def test_host_names_follow_the_same_rule(name: str) -> None:
    found = problems(DIR + FIO + f"hosts: [{{name: '{name}'}}]\n")
    assert len(found) == 1 and found[0].startswith("hosts[0].name: ")
    assert found[0].endswith("(rename it, e.g. client-1)")


@pytest.mark.parametrize("name", ["../x", "a/b", "/etc"])
def test_an_experiment_name_cannot_leave_the_work_directory(name: str) -> None:
    assert problems(f"name: '{name}'\n" + DIR + FIO) == [
        f"name: '{name}' must start with a letter or digit and use only letters, digits, "
        "'-', '_' and '.' (name it like plain-vs-stripe)"]


@pytest.mark.parametrize(("path", "expected"), [
    ("/", "/ is a system directory"),
    ("/etc", "/etc is a system directory"),
    ("/usr/lib", "/usr/lib lies in the system directory /usr"),
    ("/proc/self", "/proc/self lies in the system directory /proc"),
    ("/var", "/var is a system directory"),
    ("/boot/../etc", "/etc is a system directory"),
])
def test_a_directory_target_in_a_system_directory_is_refused(path: str, expected: str) -> None:
    assert problems(f"targets: [{{name: d, type: directory, path: '{path}'}}]\n" + FIO) == [
        f"targets[0].path: {expected}; volbench creates and removes files there {FIX_DIR}"]


def test_a_link_to_a_system_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "conf").symlink_to("/etc")
    assert problems(DIR + FIO + f"workdir: {tmp_path / 'conf'}\n") == [
        f"workdir: {tmp_path / 'conf'} is a system directory; volbench creates and removes "
        f"files there {FIX_DIR}"]


def test_workdir_must_be_a_directory_outside_the_system() -> None:
    assert problems(DIR + FIO + "workdir: /etc/passwd\n") == [
        f"workdir: /etc/passwd lies in the system directory /etc; volbench creates and "
        f"removes files there {FIX_DIR}",
        "workdir: /etc/passwd exists and is not a directory (name a directory; volbench "
        "creates it if missing)"]
    assert problems(DIR + FIO + "workdir: /\n") == [
        f"workdir: / is a system directory; volbench creates and removes files there {FIX_DIR}"]


def test_a_file_as_workdir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert problems(DIR + FIO + f"workdir: {tmp_path / 'f'}\n") == [
        f"workdir: {tmp_path / 'f'} exists and is not a directory (name a directory; "
        "volbench creates it if missing)"]


def test_relative_paths_are_taken_from_the_experiment_files_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    exp_file = tmp_path / "e.yaml"
    exp_file.write_text("targets: [{name: d, type: directory, path: data}]\n" + FIO
                        + "workdir: scratch/../work\n")
    monkeypatch.chdir("/")  # not where the file is
    exp = load(exp_file)
    assert exp.workdir == tmp_path / "work"
    assert exp.targets[0].path == tmp_path / "data"  # type: ignore[attr-defined]


def test_fio_jobfile_and_pgbench_script_are_taken_from_the_files_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.fio").write_text("[j]\nrw=read\n")
    (tmp_path / "tx.sql").write_text("SELECT 1;\n")
    exp_file = tmp_path / "e.yaml"
    exp_file.write_text(DIR + "workloads: [{name: f, tool: fio, jobfile: job.fio},\n"
                        "            {name: p, tool: pgbench, script: tx.sql}]\n")
    monkeypatch.chdir("/")
    exp = load(exp_file)
    assert exp.workloads[0].jobfile == tmp_path / "job.fio"  # type: ignore[attr-defined]
    assert exp.workloads[1].matrix["script"] == (str(tmp_path / "tx.sql"),)


def test_a_copy_of_the_file_can_keep_the_originals_folder(tmp_path: Path) -> None:
    """`lab run` runs a copy in a shared folder; relative paths still mean the original's."""
    (tmp_path / "orig").mkdir()
    (tmp_path / "orig" / "job.fio").write_text("[j]\nrw=read\n")
    (tmp_path / "copy").mkdir()
    text = DIR + "workloads: [{name: w, tool: fio, jobfile: job.fio}]\n"
    (tmp_path / "copy" / "e.yaml").write_text(text)
    exp = load(tmp_path / "copy" / "e.yaml", tmp_path / "orig")
    assert exp.workloads[0].jobfile == tmp_path / "orig" / "job.fio"  # type: ignore[attr-defined]
    with pytest.raises(ExperimentError, match=r"cannot read the fio job file .*: No such file"):
        load(tmp_path / "copy" / "e.yaml")


@pytest.mark.parametrize(("line", "expected"), [
    ("repeat: 100000000", "repeat: must be at most 1000, got 100000000"),
    ("repeat: {min: 3, max: 5000}", "repeat.max: must be at most 1000, got 5000"),
    ("warmup: 101", "warmup: must be at most 100, got 101"),
])
def test_counts_have_upper_bounds(line: str, expected: str) -> None:
    assert expected in problems(DIR + FIO + line + "\n")


@pytest.mark.parametrize(("fields", "expected"), [
    ("bs: 0", "workloads[0].bs: must be larger than 0, got 0"),
    ("size: 0", "workloads[0].size: must be larger than 0, got 0"),
    ("bs: -4096", "workloads[0].bs: a size cannot be negative: -4096"),
    ("numjobs: 100000", "workloads[0].numjobs: expected a whole number, at most 1024, got 100000"),
    ("iodepth: 5000", "workloads[0].iodepth: expected a whole number, at most 4096, got 5000"),
    ("iodepth: 0", "workloads[0].iodepth: expected a whole number, at least 1, got 0"),
    ("size: 99999999999999999999999999G",
     "workloads[0].size: '99999999999999999999999999G' is larger than any disk (at most 1E)"),
    (f"runtime: {'9' * 400}s",
     f"workloads[0].runtime: '{'9' * 19}…(403 characters) is longer than any run "
     "(at most 1e+09 s)"),
])
def test_zero_negative_and_absurd_sizes_are_refused(fields: str, expected: str) -> None:
    assert problems(DIR + f"workloads: [{{name: w, tool: fio, {fields}}}]\n") == [expected]


def test_a_huge_plan_is_refused_at_once_not_planned_for_ever() -> None:
    """Bounded in CPU seconds (tests/bounds.py CpuTimed): 0.03 s quiet and niced beside a
    2-core hog alike, where the wall seconds were 0.06-0.11 s and 1.4-1.8 s (the old wall
    bound was 2 s). Planning the 11.2 million runs would take minutes."""
    axis = "[" + ", ".join(str(i) for i in range(1, 41)) + "]"
    text = (DIR + f"workloads: [{{name: w, tool: fio, iodepth: {axis}, numjobs: {axis}, "
            "rw: [read, write, randread, randwrite, readwrite, randrw, trim]}]\n"
            "repeat: 1000\n")
    with CpuTimed() as timed:
        found = problems(text)
    timed.within("huge plan refused: CPU s", 2)
    assert found == [
        "workloads[0]: its matrix makes 11200 cases, at most 10000 are allowed (give its axes "
        "fewer values)",
        "repeat: the plan has 11200000 runs (1 targets x 11200 cases x 1000 rounds), at most "
        "100000 are allowed (split the experiment or repeat fewer times)"]


def test_repeat_of_a_hundred_million_is_refused_quickly() -> None:
    """CPU seconds: 0.002-0.003 s quiet and beside a hog (wall up to 0.18 s there)."""
    with CpuTimed() as timed:
        found = problems(DIR + FIO + "repeat: 100000000\n")
    timed.within("repeat of 1e8 refused: CPU s", 2)
    assert found[0] == "repeat: must be at most 1000, got 100000000"


def test_duplicate_keys_name_the_key_and_both_lines() -> None:
    assert problems(DIR + FIO + "repeat: 3\nrepeat: 5\n") == [
        "line 4: duplicate key 'repeat' (first on line 3) (keep one of them)"]
    assert problems("targets:\n  - name: d\n    type: directory\n    name: e\n" + FIO) == [
        "line 4: duplicate key 'name' (first on line 2) (keep one of them)"]


def test_a_merge_key_may_be_overridden() -> None:
    exp = parse_text(DIR + "workloads: [{<<: {tool: fio, runtime: 1s}, name: w, runtime: 2s}]\n")
    assert exp.workloads[0].matrix["runtime"] == (2.0,)


def test_yaml_nested_thousands_deep_is_one_problem() -> None:
    assert problems("a: " + "[" * 5000 + "]" * 5000 + "\n") == [
        "line 1, column 67: not valid YAML: nested more than 64 levels deep (check "
        "indentation and quoting there)"]


def test_a_binary_file_is_one_problem(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_bytes(b"name: x\n\x7fELF\x02\x01\xff\xfe\x00")
    with pytest.raises(ExperimentError) as info:
        load(path)
    assert [str(p) for p in info.value.problems] == [
        "line 2: not UTF-8 text (byte 0xff at offset 14) (an experiment file is YAML text "
        "saved as UTF-8)"]


def test_aliases_of_aliases_are_refused_before_they_expand() -> None:
    """CPU seconds: 0.031 s quiet and beside a hog (wall 0.06-0.12 s, 0.45-2.4 s there);
    expanding the billion values would not end."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    with CpuTimed() as timed:
        found = problems("\n".join(lines) + "\n")
    assert found == [
        "(YAML): expands to more than 100000 values (use fewer aliases (*name) of aliases)"]
    timed.within("aliases of aliases refused: CPU s", 5)


def test_a_file_that_never_ends_is_refused() -> None:
    """A device is refused before it is read (issue 25: so is a FIFO, which would block)."""
    with pytest.raises(ExperimentError) as info:
        load(Path("/dev/zero"))
    assert [str(p) for p in info.value.problems] == [
        "/dev/zero: is a device, not an experiment file (give the path of a YAML file)"]


def test_a_file_too_large_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(11 * 1024**2)  # sparse: costs no disk
    with pytest.raises(ExperimentError) as info:
        load(big)
    assert [str(p) for p in info.value.problems] == [
        f"{big}: larger than 10 MiB (is this an experiment file?)"]


def test_a_lab_disk_count_of_zero_is_a_problem_not_a_crash() -> None:
    """Found by the property test (max() of no disk names)."""
    found = problems(DIR + FIO + "lab: {disks: [{name: d, count: 0}]}\n")
    assert "lab.disks[0].count: must be at least 1, got 0" in found
