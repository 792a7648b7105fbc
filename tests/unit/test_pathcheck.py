"""pathcheck: every fio setting that names a path, runs a command or changes the machine."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pytest

from support import need
from volbench.config import pathcheck
from volbench.config.pathcheck import Place, Setting

TARGET = "/srv/t/.volbench-1"
DIR = Place(TARGET, None)
RAW = Place(None, "/dev/loop3")
PLAN_DIR = Place("${VOLBENCH_DIR}", None, known=False)
PLAN_RAW = Place(None, "${VOLBENCH_DEV}", known=False)


def opts(place: Place, **options: str) -> list[str]:
    return [str(p) for p in pathcheck.check(pathcheck.from_options(options, "w.options"),
                                            place)]


def jobfile(tmp_path: Path, text: str, place: Place, name: str = "job.fio") -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    base = ([Setting("directory", place.directory, "global", "volbench")]
            if place.directory else [])
    return [str(p) for p in pathcheck.check(pathcheck.read_jobfile(path), place, base)]


def test_the_issue_s_first_example_a_device_in_options_of_a_directory_target() -> None:
    (problem,) = opts(DIR, filename="/dev/loop0")
    assert problem.startswith("w.options.filename: '/dev/loop0': is outside the "
                              f"target's directory {TARGET}")
    assert "make a `directory` target for it" in problem


def test_paths_inside_the_target_pass() -> None:
    assert opts(DIR, filename=f"{TARGET}/a.dat") == []
    assert opts(DIR, filename="${VOLBENCH_DIR}/a:${VOLBENCH_DIR}/b") == []
    assert opts(DIR, directory=f"{TARGET}/sub", filename="x") == []
    assert opts(RAW, filename="/dev/loop3") == []
    assert opts(RAW, filename="${VOLBENCH_DEV}") == []
    assert opts(PLAN_DIR, filename="${VOLBENCH_DIR}/f") == []
    assert opts(PLAN_RAW, filename="${VOLBENCH_DEV}") == []
    assert opts(DIR, filename=f"{TARGET}/a", write_bw_log="bw", rw="randrw", bs="4k") == []


@pytest.mark.parametrize("options, words", [
    ({"filename": f"{TARGET}/../escape"}, "leaves the target's directory"),
    ({"filename": f"{TARGET}/a:/etc/passwd"}, "'/etc/passwd'"),  # one of a ':' list
    ({"filename": "relative.dat"}, "relative to fio's working directory"),
    ({"directory": "/tmp", "filename": "x"}, "directory: '/tmp'"),
    ({"opendir": "/etc"}, "opendir: '/etc'"),
    ({"filename": "${HOME}/x"}, "uses ${HOME}"),
    ({"filename": f"{TARGET}/x", "write_lat_log": "/var/log/x"}, "write_lat_log"),
    ({"filename": f"{TARGET}/x", "write_iolog": "../../x"}, "climbs out with '..'"),
    ({"filename": f"{TARGET}/x", "read_iolog": "/root/trace"}, "read_iolog"),
    ({"filename": f"{TARGET}/x", "exec_prerun": "rm -rf /"}, "runs a shell command"),
    ({"filename": f"{TARGET}/x", "exec_postrun": "touch /x"}, "exec_postrun"),
    ({"filename": f"{TARGET}/x", "ioengine": "external:/tmp/evil.so"}, "can confine"),
    ({"filename": f"{TARGET}/x", "ioengine": "exec"}, "can confine"),
    ({"filename": f"{TARGET}/x", "cgroup": "x"}, "throttling cgroup"),
    ({"filename": f"{TARGET}/x", "ioscheduler": "none"}, "outlives the run"),
    ({"filename": f"{TARGET}/x", "profile": "tiobench"}, "makes jobs of its own"),
    ({"filename": f"{TARGET}/x", "mem": "mmaphuge:/dev/hugepages/f"}, "mem"),
    ({"filename": f"{TARGET}/x", "output": "/etc/x"}, "command-line option"),
    ({"filename": f"{TARGET}/x", "aux-path": "/etc"}, "command-line option"),
    ({"filename": f"{TARGET}/x", "name": "../../etc/x"}, "job names become file names"),
    ({"filename": f"{TARGET}/x", "filename_format": "../$jobname"}, "climbs out"),
    ({"filename": f"{TARGET}/x", "replay_redirect": "/dev/sda"}, "block device"),
])
def test_each_way_out_is_refused(options: dict[str, str], words: str) -> None:
    problems = opts(DIR, **options)
    assert problems and any(words in p for p in problems), problems


def test_a_raw_target_is_its_device_only() -> None:
    (problem,) = opts(RAW, filename="/dev/loop4")
    assert "is not the target's block device" in problem and "${VOLBENCH_DEV}" in problem
    assert "a raw target has no directory" in " ".join(opts(RAW, directory="/dev"))
    assert opts(RAW, filename="/dev/loop3", replay_redirect="/dev/loop3") == []


def test_before_the_build_only_variables_and_relative_names_can_be_placed() -> None:
    (problem,) = opts(PLAN_DIR, filename="/srv/t/data")
    assert "whose directory exists only once built" in problem
    assert opts(PLAN_RAW, filename="/dev/disk/by-id/x")


def test_the_issue_s_second_example_directory_in_a_job_section(tmp_path: Path) -> None:
    text = "[global]\nrw=write\n\n[dev]\ndirectory=/dev\nfilename=loop0\n"
    (problem,) = jobfile(tmp_path, text, DIR)
    assert problem.startswith(f"{tmp_path}/job.fio:5 [dev] directory: '/dev': is outside")
    other = "[dev]\ndirectory=/some/other/dir\nsize=8M\n"
    assert "'/some/other/dir'" in jobfile(tmp_path, other, DIR)[0]


def test_job_files_global_sections_includes_and_names(tmp_path: Path) -> None:
    (tmp_path / "inc.fio").write_text("; included\nwrite_iops_log=/etc/iops\n")
    text = ("[global]\ndirectory=${VOLBENCH_DIR}/sub\n"
            "[ok]\nfilename=a\n"
            "[../escape]\nrw=read\n"
            "include inc.fio\n")
    problems = jobfile(tmp_path, text, DIR)
    assert any(p.startswith(f"{tmp_path}/job.fio:5 [../escape] [") for p in problems)
    assert any(p.startswith(f"{tmp_path}/inc.fio:2 [../escape] write_iops_log") for p in problems)
    assert len(problems) == 2, problems


def test_a_job_with_no_file_on_a_raw_target_would_write_in_the_working_directory(
        tmp_path: Path) -> None:
    (problem,) = jobfile(tmp_path, "[j]\nrw=read\n", RAW)
    assert "neither filename nor directory" in problem
    assert jobfile(tmp_path, "[j]\nrw=read\nfilename=${VOLBENCH_DEV}\n", RAW) == []


def test_symlinks_out_of_the_target_are_followed_once_it_exists(tmp_path: Path) -> None:
    target = tmp_path / "target"
    outside = tmp_path / "outside"
    target.mkdir()
    outside.mkdir()
    (target / "link").symlink_to(outside)
    place = Place(str(target), None, os.path.realpath)
    (problem,) = opts(place, filename=f"{target}/link/f")
    assert "is outside the target" in problem or "leaves the target" in problem
    assert opts(place, filename=f"{target}/f") == []


def test_fio_lists_split_on_unescaped_colons() -> None:
    assert pathcheck.split_list("a:b\\:c::d") == ["a", "b:c", "d"]


def test_include_loops_stop() -> None:
    texts = {"a.fio": "include a.fio\n"}
    settings = pathcheck.read_jobfile(Path("a.fio"), lambda p: texts[p.name])
    problems = [str(p) for p in pathcheck.check(settings, DIR)]
    assert any("includes nest more than 8 deep" in p for p in problems), problems


def test_every_filename_line_counts_as_fio_adds_a_file_for_each(tmp_path: Path) -> None:
    # Seen with fio 3.33: two filename lines in one section made two files.
    text = "[j]\nfilename=${VOLBENCH_DEV}\nfilename=/dev/loop5\n"
    (problem,) = jobfile(tmp_path, text, RAW)
    assert problem.startswith(f"{tmp_path}/job.fio:3 [j] filename: '/dev/loop5'")


def test_global_is_only_global_in_lower_case(tmp_path: Path) -> None:
    # fio runs [GLOBAL] as a job of its own; its directory is checked like any job's.
    problems = jobfile(tmp_path, "[GLOBAL]\ndirectory=/etc\n[j]\nfilename=f\n", DIR)
    assert [p.split(":", 2)[1] for p in problems] == ["2 [GLOBAL] directory"]


def test_a_directory_in_global_covers_every_later_job(tmp_path: Path) -> None:
    text = "[a]\nfilename=x\n[global]\ndirectory=/var\n[b]\nfilename=y\n"
    (problem,) = jobfile(tmp_path, text, DIR)
    assert problem.startswith(f"{tmp_path}/job.fio:4 [global] directory: '/var'")


HOWTO = Path("/usr/share/doc/fio/HOWTO.rst.gz")


def test_every_string_option_of_the_installed_fio_is_classified() -> None:
    """A fio with a new path option fails this test until pathcheck knows the option."""
    need(HOWTO.exists(), f"{HOWTO} (Debian package fio) is missing")
    known = {*pathcheck.IN_DIRECTORY, *pathcheck.DIRECTORIES, *pathcheck.LOGS,
             *pathcheck.DEVICES, *pathcheck.FORBIDDEN, *pathcheck.VALUES,
             *pathcheck.MEM_KEYS, *pathcheck.NAME_KEYS, "ioengine"}
    # Options of `profile=` (refused as a whole) and of engines volbench refuses.
    profile_only = {"dir", "device-names"}
    unclassified, seen = [], 0
    for line in gzip.decompress(HOWTO.read_bytes()).decode().splitlines():
        m = re.match(r"^\.\. option:: (?!--)(.*)$", line)
        if not m or "=str" not in m.group(1):
            continue
        head, _, tags = m.group(1).partition(" : ")
        engines = set(re.findall(r"\[([^\]]+)\]", tags))
        if engines and not any(e in pathcheck.ENGINES for e in engines):
            continue
        for name in re.findall(r"([a-z_-]+)=str", head):
            seen += 1
            if name not in known | profile_only:
                unclassified.append(name)
    assert unclassified == [] and seen > 60


def test_a_special_file_at_a_name_inside_the_target_is_refused(tmp_path: Path) -> None:
    """Issue 25: a path rule alone passes a device node or FIFO planted in the target's
    directory; fio would then write into whatever it stands for."""
    os.mkfifo(tmp_path / "data.dat")
    (tmp_path / "plain.dat").write_text("x")
    place = Place(str(tmp_path), None, os.path.realpath, special=pathcheck.special_file)
    (problem,) = opts(place, filename=f"{tmp_path}/data.dat")
    assert "data.dat': is a FIFO, not a file" in problem
    assert opts(place, filename=f"{tmp_path}/plain.dat") == []
    assert opts(place, filename=f"{tmp_path}/absent.dat") == []
