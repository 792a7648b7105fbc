"""Where fio may read and write: inside the target, nowhere else (docs/safety.md).

volbench runs fio as root. Every fio setting that names a file, a directory or a
device, runs a command or changes the machine is checked here before fio starts,
for the options of a fio workload (`options:`) and for users' job files ([global]
and every job section, `include`d files too).

How the option lists were derived (fio 3.33, the version Debian 12 ships): every
option of `fio --cmdhelp=all` whose type `fio --cmdhelp=NAME` gives as "string",
read one by one against its description and the HOWTO (/usr/share/doc/fio/HOWTO.rst.gz,
`.. option::` lines, which also list the engine-specific and command-line-only
options that --cmdhelp=all leaves out). Of those 70 string options, the ones below
name a path or run something; the rest (rw, bssplit, verify, cpus_allowed, …) are
values. Aliases come from `fio --cmdhelp=NAME` ("alias:"): only mem/iomem has one.

The module is pure: it reads job files through a function it is given and never
starts anything. `resolve` turns a path into its real location (symlinks followed)
once the target exists; before that (plan time) it is only normalised, and an
absolute path that volbench cannot yet place is refused.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from volbench.core.errors import Problem

# fio's file placement: `filename` (a ':' list) is put under `directory` (also a
# ':' list) whether it is absolute or not; with no filename, the job's name is used.
IN_DIRECTORY = ("filename", "filename_format")
DIRECTORIES = ("directory", "opendir")
# Logs and I/O traces: relative names land in fio's working directory, which is the
# run's private directory volbench removes; absolute ones must be in the target.
LOGS = ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
        "write_iolog", "read_iolog", "merge_blktrace_file")
# A device fio replays a trace onto: only the raw target's own.
DEVICES = ("replay_redirect",)
# Run commands or change the machine beyond the target: never.
FORBIDDEN = {
    "exec_prerun": "runs a shell command as root, which volbench cannot confine",
    "exec_postrun": "runs a shell command as root, which volbench cannot confine",
    "cgroup": "moves fio into a cgroup of its own, out of the target's throttling cgroup",
    "ioscheduler": "changes the I/O scheduler of a device, which outlives the run",
    "profile": "makes jobs of its own, on directories or devices it is given (dir=, "
               "device-names=)",
}
# The other string options of fio 3.33: values, not paths (the HOWTO's `=str` options,
# less those of engines volbench refuses; tests/unit/test_pathcheck.py checks that every
# `=str` option of the installed fio's HOWTO is in one of these lists).
VALUES = ("description", "clocksource", "lockfile", "file_service_type", "zonemode", "rw",
          "readwrite", "rw_sequencer", "unified_rw_reporting", "fallocate", "fadvise_hint",
          "write_hint", "sync_file_range", "random_distribution", "random_generator",
          "bssplit", "buffer_pattern", "dedupe_mode", "sync", "cmdprio_bssplit", "cmd_type",
          "cpumode", "stat_type", "sg_write_mode", "io_submit_mode",
          "thinktime_blocks_type", "rate_process", "replay_skip", "wait_for", "cpus_allowed",
          "cpus_allowed_policy", "numa_cpu_nodes", "numa_mem_policy", "exit_what", "verify",
          "verify_pattern", "verify_async_cpus", "steadystate", "ss", "log_compression_cpus",
          "continue_on_error", "ignore_error", "size", "pool")
FORBIDDEN_FIX = ("remove it; run commands as a `command` workload, and change the machine "
                 "before volbench runs")
# fio command-line options that write files or reach other machines. `options:` become
# command-line options, so these must not come from there.
COMMAND_LINE = ("output", "output-format", "aux-path", "daemonize", "trigger-file",
                "trigger", "trigger-remote", "remote-config", "client", "server",
                "bandwidth-log", "exec")
# Engines that do I/O only on the files or devices named above. Not here: exec (runs a
# program), external:/path (loads code), network and cluster engines (net, rdma, rbd,
# rados, gfapi, nbd, http), e4defrag (a donor file of its own), mtd.
ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring",
           "io_uring_cmd", "posixaio", "mmap", "splice", "null", "cpuio", "falloc",
           "ftruncate", "filecreate", "filestat", "filedelete", "sg", "libpmem", "dev-dax",
           "pmemblk")
# mem=mmaphuge:/hugetlbfs/file and mmap:/file back fio's buffers with a file there.
MEM_KEYS = ("mem", "iomem")
NAME_KEYS = ("name",)
# ${VAR} (fio expands the environment in job files); volbench passes these two.
_VAR = re.compile(r"\$\{([^}]*)\}")
DIR_VAR, DEV_VAR = "VOLBENCH_DIR", "VOLBENCH_DEV"
MAX_INCLUDE_DEPTH = 8


@dataclass(frozen=True)
class Setting:
    """One `key=value` of a job file or of `options:`, and where it was written."""

    key: str
    value: str | None
    section: str
    source: str
    line: int | None = None

    def where(self) -> str:
        """`job.fio:12 [dev] directory` in a job file; `workloads[0].options.directory`
        for a field of the experiment file."""
        if self.line is not None:
            return f"{self.source}:{self.line} [{self.section}] {self.key}"
        return self.source if self.source.endswith(f".{self.key}") else \
            f"{self.source}.{self.key}"


@dataclass(frozen=True)
class Place:
    """What a run may touch: the target's directory or its raw block device.

    `known` is False at plan time, when the target is not built yet: its directory
    and device exist only as ${VOLBENCH_DIR} / ${VOLBENCH_DEV}.
    """

    directory: str | None
    device: str | None
    resolve: Callable[[str], str] = os.path.normpath
    known: bool = True
    special: Callable[[str], str | None] = lambda path: None


def special_file(path: str) -> str | None:
    """What an existing path in a directory target is when it is not a plain file or
    directory ('a block device', …); None otherwise. A device node planted in the
    target's directory passes every path rule yet sends fio's writes to that device."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for test, what in ((stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None


RAW_FIX = "a raw target is its block device: use filename=${VOLBENCH_DEV}"
DIR_FIX = ("use a name relative to the target's directory or ${VOLBENCH_DIR}/…; to use "
           "that path, make a `directory` target for it")


# fio runs at most this many jobs (its REAL_MAX_JOBS): a job file with more sections is
# refused as it is read, before anything walks them (200 000 empty jobs took 97 s).
MAX_JOBS = 4096


class TooManyJobs(ValueError):
    """A job file (with its includes) has more sections than fio runs jobs."""


def flatten(path: Path, read: Callable[[Path], str], _depth: int = 0) -> str:
    """The job file's text with every `include` replaced by the included file's text,
    as fio reads it (a relative name from the including file's folder): the one file
    volbench copies into the run directory for fio to read."""
    if _depth > MAX_INCLUDE_DEPTH:
        raise TooManyJobs(f"{path}: includes nest more than {MAX_INCLUDE_DEPTH} deep; break "
                          "the include loop")
    out = []
    for raw in read(path).splitlines():
        line = raw.strip()
        if line.startswith("include ") or line.startswith("include\t"):
            name = Path(line[len("include"):].strip())
            out.append(flatten(name if name.is_absolute() else path.parent / name, read,
                               _depth + 1).rstrip("\n"))
        else:
            out.append(raw)
    return "\n".join(out) + "\n"


def read_jobfile(path: Path, read: Callable[[Path], str] = Path.read_text,
                 _depth: int = 0, section: str = "", _jobs: list[int] | None = None
                 ) -> list[Setting]:
    """Every setting of a job file in order, `include`d files in place (in the section
    that includes them); section headers appear as settings with key '['. More than
    MAX_JOBS sections, includes counted, raise TooManyJobs."""
    jobs = [0] if _jobs is None else _jobs
    if _depth > MAX_INCLUDE_DEPTH:
        return [Setting("include", str(path), section, str(path), None)]
    out: list[Setting] = []
    for number, raw in enumerate(read(path).splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("include ") or line.startswith("include\t"):
            name = Path(line[len("include"):].strip())
            name = name if name.is_absolute() else path.parent / name
            out += read_jobfile(name, read, _depth + 1, section, jobs)
            continue
        if line.startswith("[") and "]" in line:
            section = line[1:line.index("]")].strip()
            jobs[0] += 1
            if jobs[0] > MAX_JOBS:
                raise TooManyJobs(f"{path}:{number}: more than {MAX_JOBS} jobs; fio runs "
                                  f"at most {MAX_JOBS}")
            out.append(Setting("[", section, section, str(path), number))
            continue
        key, eq, value = line.partition("=")
        out.append(Setting(key.strip().lower(), value.strip() if eq else None, section,
                           str(path), number))
    return out


def from_options(options: Mapping[str, str], source: str) -> list[Setting]:
    return [Setting(str(k).lower(), str(v), "options", source) for k, v in options.items()]


def expand(value: str, place: Place) -> tuple[str, list[str]]:
    """${VOLBENCH_DIR}/${VOLBENCH_DEV} put in; the names of any other variables."""
    unknown: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == DIR_VAR and place.directory is not None:
            return place.directory
        if name == DEV_VAR and place.device is not None:
            return place.device
        unknown.append(name)
        return m.group(0)

    return _VAR.sub(sub, value), unknown


def split_list(value: str) -> list[str]:
    """fio's ':' separated lists, where '\\:' is a literal colon."""
    parts = re.split(r"(?<!\\):", value)
    return [p.replace("\\:", ":") for p in parts if p]


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _problem(s: Setting, why: str, fix: str, shown: str | None = None) -> Problem:
    """`shown`: the offending path when it is one part of the value (a ':' list)."""
    value = shown if shown is not None else s.value
    return Problem(s.where(), f"{value!r}: {why}" if value is not None else why, fix)


def _is_device(path: str, place: Place) -> bool:
    if place.device is None:
        return False
    return place.resolve(path) == place.resolve(place.device)


def _check_in_target(s: Setting, path: str, place: Place) -> Problem | None:
    """A path (after expansion) that must lie in the target's directory, or be its device."""
    directory = place.directory
    if directory is None and _is_device(path, place):
        return None
    if directory is not None and _inside(path, directory):
        # Lexically under it; normalised (or resolved) again to catch '..' and symlinks.
        if _inside(place.resolve(path), place.resolve(directory)):
            return _check_plain(s, path, place)
        return _problem(s, f"leaves the target's directory {directory}", DIR_FIX, path)
    if not path.startswith("/"):
        return _problem(s, "is relative to fio's working directory, not in the target",
                        DIR_FIX if directory is not None else RAW_FIX, path)
    if directory is None:
        return _problem(s, "is not the target's block device", RAW_FIX, path)
    if not place.known:
        return _problem(s, "is outside the target (whose directory exists only once built)",
                        DIR_FIX, path)
    if not _inside(place.resolve(path), place.resolve(directory)):
        return _problem(s, f"is outside the target's directory {directory}", DIR_FIX, path)
    return _check_plain(s, path, place)


def _check_plain(s: Setting, path: str, place: Place) -> Problem | None:
    what = place.special(place.resolve(path))
    if what is None:
        return None
    return _problem(s, f"is {what}, not a file: something put it in the target's directory",
                    "remove it (or the workload that makes it); fio's files in a directory "
                    "target are plain files", path)


def _simple(s: Setting, place: Place) -> list[Problem]:
    """Checks that need no other setting: forbidden keys, engines, names, logs, memory."""
    key, value = s.key, s.value or ""
    if key == "include":  # only read_jobfile's marker for includes nested too deep
        return [_problem(s, f"includes nest more than {MAX_INCLUDE_DEPTH} deep",
                         "break the include loop")]
    if key in FORBIDDEN:
        return [_problem(s, FORBIDDEN[key], FORBIDDEN_FIX)]
    if key in COMMAND_LINE and s.line is None:
        return [_problem(s, "is a fio command-line option that volbench sets or that writes "
                            "outside the target", "remove it from options:")]
    if key == "ioengine" and value not in ENGINES:
        return [_problem(s, "is not an engine volbench can confine to the target (it runs "
                            "code, loads a library or reaches other machines)",
                         f"use one of {', '.join(ENGINES[:8])} …")]
    if (key in NAME_KEYS or key == "[") and ("/" in value or value in ("..", ".")):
        return [_problem(s, "job names become file names; a '/' in one leaves the "
                            "target", "name the job without '/'")]
    if key in LOGS and s.value:
        path, unknown = expand(value, place)
        if unknown:
            return [_problem(s, f"uses ${{{unknown[0]}}}, unknown before the run", DIR_FIX)]
        if ".." in Path(path).parts:
            return [_problem(s, "climbs out with '..'", DIR_FIX)]
        if path.startswith("/"):
            bad = _check_in_target(s, path, place)
            return [bad] if bad else []
    if key in MEM_KEYS and ":" in value:
        path, _ = expand(value.split(":", 1)[1], place)
        bad = _check_in_target(s, path, place)
        return [bad] if bad else []
    if key in DEVICES and s.value:
        path, _ = expand(value, place)
        if not _is_device(path, place):
            return [_problem(s, "is not the target's block device", RAW_FIX)]
    return []


def jobs(settings: Sequence[Setting], base: Sequence[Setting] = ()
         ) -> list[tuple[str, list[Setting]]]:
    """Each job's settings in order: `base`, then [global] sections so far, then its own.

    All of them, not the last of each key: fio adds a file for every `filename` line
    (seen: two lines, two files). Settings in no job section (options: alone) form one
    job, as fio runs them with --name."""
    glob: list[Setting] = list(base)
    found: list[tuple[str, list[Setting]]] = []
    current: list[Setting] | None = None
    for s in settings:
        if s.key == "[":
            if s.value == "global":  # case matters: fio runs [GLOBAL] as a job
                current = None
            else:
                current = list(glob)
                found.append((s.value or "", current))
            continue
        (glob if current is None else current).append(s)
    return found or [("options", glob)]


def _directories(history: Sequence[Setting], place: Place
                 ) -> tuple[list[str | None], list[Problem]]:
    """Every directory the job's files may be put under, and what is wrong with them."""
    problems: list[Problem] = []
    dirs: list[str | None] = []
    for s in history:
        if s.key not in DIRECTORIES:
            continue
        for part in split_list(s.value or ""):
            path, unknown = expand(part, place)
            bad = (_problem(s, f"uses ${{{unknown[0]}}}, unknown before the run", DIR_FIX)
                   if unknown else _check_dir(s, path, place))
            if bad:
                problems.append(bad)
            if s.key == "directory":
                dirs.append(path)
    # No `directory`: fio takes names as they are (relative ones in its working directory).
    return dirs or [None], problems


def _job_files(job: str, history: Sequence[Setting], place: Place) -> list[Problem]:
    """Where a job's data files land: each filename under each directory it may get."""
    dirs, problems = _directories(history, place)
    if problems:
        return problems
    names = [(s, v) for s in history if s.key in IN_DIRECTORY for v in split_list(s.value or "")]
    if not names:
        if dirs == [None]:
            where = Setting("name", job, job, "job", None)
            return [_problem(where, "has neither filename nor directory, so fio would write "
                                    f"'{job}.0.0' in its working directory, not the target",
                             RAW_FIX if place.directory is None else DIR_FIX)]
        return []
    for s, name in names:
        name, unknown = expand(name, place)
        if unknown:
            problems.append(_problem(s, f"uses ${{{unknown[0]}}}, unknown before the run",
                                     DIR_FIX))
            continue
        if name == "-":  # stdin/stdout
            continue
        if s.key == "filename_format" and ".." in Path(name).parts:
            problems.append(_problem(s, "climbs out with '..'", DIR_FIX))
            continue
        for directory in dirs:
            full = f"{directory}/{name}" if directory is not None else name
            bad = _check_in_target(s, full, place)
            if bad:
                problems.append(bad)
                break
    return problems


def _check_dir(s: Setting, path: str, place: Place) -> Problem | None:
    if place.directory is None:
        return _problem(s, "a raw target has no directory", RAW_FIX)
    return _check_in_target(s, path, place)


def check(settings: Iterable[Setting], place: Place, base: Sequence[Setting] = ()
          ) -> list[Problem]:
    """Every problem with these settings for a run on `place` (empty: fio may run).

    `base` are the settings volbench itself gives fio before them (its data file)."""
    settings = list(settings)
    problems = [p for s in [*base, *settings] for p in _simple(s, place)]
    for job, history in jobs(settings, base):
        problems += _job_files(job, history, place)
    unique: dict[str, Problem] = {}
    for p in problems:
        unique.setdefault(str(p), p)
    return list(unique.values())
