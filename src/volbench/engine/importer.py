"""Turning existing tool outputs into runs of a named target, so old results compare with new.

Each file becomes one run (repetition = its position on the command line) of an
experiment named `import:<target>`; parameters are read back from the output
itself where the tool records them (fio's job options), with the same names and
spellings volbench's own runs use, so imported and new runs of one case line up.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from volbench.config import userfile
from volbench.core import syncmode, units, valuecheck
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Parsed, RunResult, Scalar, Status
from volbench.stats.windows import with_windows
from volbench.store.db import Store
from volbench.workloads import bonnie, dd, fio, fiologs, fiosync, hdparm, pgbench_parse
from volbench.workloads.shape import SHAPE_ERRORS, shape_message

# Far above any tool's output (a json+ log of hours is tens of MB); `import /dev/zero`
# must not read for ever.
MAX_FILE_BYTES = userfile.LIMITS["file to import"]
IMPORT_KIND = "file to import"


@dataclass(frozen=True)
class Imported:
    """One existing tool output as a run: the params it ran with (as far as the output says),
    what was parsed, and when it started if the output says."""

    params: dict[str, Scalar]
    parsed: Parsed
    started: float | None = None
    # Non-empty: the output is of a run that failed (a pgbench init's error): stored as a
    # failed run with this message, never as a finished one.
    failure: str = ""


def _fio_params(data: Mapping[str, Any]) -> dict[str, Scalar]:
    """Our parameter names from fio's own record of its options (first job, then global)."""
    jobs = data.get("jobs") or data.get("client_stats") or []
    options: dict[str, Any] = dict(data.get("global options") or {})
    if jobs:
        options.update(jobs[0].get("job options") or {})
    params: dict[str, Scalar] = {}
    if "rw" in options:
        params["rw"] = str(options["rw"])
    for key in ("bs", "size"):
        if key in options:
            try:
                params[key] = units.format_size(units.parse_size(str(options[key])))
            except ValueError:
                params[key] = str(options[key])
    for key in ("iodepth", "numjobs", "rwmixread", "direct"):
        if key in options and str(options[key]).isdigit():
            params[key] = int(options[key])
    if "runtime" in options:
        try:
            params["runtime"] = units.parse_duration(str(options["runtime"]))
        except ValueError:
            params["runtime"] = str(options["runtime"])
    if "ioengine" in options:
        params["ioengine"] = str(options["ioengine"])
    mode = fiosync.options_mode(options)
    if mode.syncs:  # as a live run of `sync:` records it (workloads/fiosync.py)
        params[syncmode.PARAM] = mode.text
    return params


def import_fio(text: str, source: str) -> Imported:
    """A run from fio's JSON: params from its job options, metrics as a measured run's, the
    start from fio's timestamp; bad JSON is a ParseError."""
    data = fio.load_json(text, source)
    parsed = fio.parse_json(text, source)
    stamp = data.get("timestamp")
    return Imported(_fio_params(data), parsed, float(stamp) if stamp else None)


def import_bonnie(text: str, source: str) -> Imported:
    """bonnie++ CSV (1.96/1.97 and 1.98/2.00 layouts); the host's RAM is unknown, so no
    cache-influence notes; several rows (-x N) become one run tagged row=1…N."""
    return Imported(bonnie.params_of(text, source), bonnie.parse_csv(text, source))


def import_dd(text: str, source: str) -> Imported:
    """One dd run's stderr (or a terminal copy with its command line)."""
    runs = dd.runs_in(text)
    if runs > 1:
        raise ParseError("dd", source, f"the file holds {runs} dd runs; put each run's output "
                                       "in a file of its own")
    return Imported(dd.params_of(text), dd.parse_text(text, source))


def import_hdparm(text: str, source: str) -> Imported:
    """A run from hdparm's text output: params and metrics as a measured run's; text it cannot
    read is a ParseError."""
    return Imported(hdparm.params_of(text), hdparm.parse_text(text, source))


def import_pgbench(text: str, source: str) -> Imported:
    """A pgbench run's summary (with its -P progress lines if stderr is in the file too),
    its progress lines alone, or a pgbench -i output; 9.4 to 18 formats. Parameters are
    read back from the header. A failed init is a failed run with pgbench's message."""
    try:
        params, parsed = pgbench_parse.parse_any(text, source)
    except pgbench_parse.InitFailed as exc:
        scale = pgbench_parse.init_scale(text)
        return Imported({"mode": "init", **({"scale": scale} if scale else {})}, Parsed(),
                        failure=f"pgbench -i failed: {exc.detail}")
    return Imported(params, parsed)


IMPORTERS: dict[str, Callable[[str, str], Imported]] = {"fio": import_fio}
IMPORT_HINTS = {"fio": " (fio writes JSON with --output-format=json or json+)"}
IMPORTERS.update({"bonnie++": import_bonnie, "dd": import_dd, "hdparm": import_hdparm})
IMPORTERS["pgbench"] = import_pgbench


def fio_logs_beside(path: Path) -> dict[str, str]:
    """fio's per-second logs written beside a JSON file by a job with
    `write_iops_log=<stem>` (and bw, lat, hist alike): `run1.json` takes `run1_iops.1.log`,
    `run1_bw.1.log`, `run1_lat.1.log`, `run1_clat_hist.1.log` (or a live run's logs kept
    as `run1.fio_iops.1.log` …), renamed to the names a live run keeps (`fio_iops.1.log`).
    Logs of another stem are never taken."""
    found: dict[str, str] = {}
    pattern = re.compile(rf"^{re.escape(path.stem)}(?:_|\.{fiologs.LOG_PREFIX}_)"
                         r"(iops|bw|lat|clat_hist)\.(\d+)\.log$")
    for other in sorted(path.parent.iterdir()) if path.parent.is_dir() else []:
        m = pattern.match(other.name)
        if m and other.is_file() and other.stat().st_size <= MAX_FILE_BYTES:
            found[f"{fiologs.LOG_PREFIX}_{m.group(1)}.{m.group(2)}.log"] = \
                other.read_text(errors="replace")
    return found


def with_fio_logs(imported: Imported, logs: Mapping[str, str]) -> Imported:
    """The fio run with the series of its per-second logs and their window percentiles,
    as a live run has them (workloads/fio.py parse_output)."""
    if not logs:
        return imported
    series = fiologs.parse_logs(logs)
    extra = fiologs.window_percentiles(logs, series)
    parsed = imported.parsed
    return replace(imported, parsed=Parsed(parsed.metrics + tuple(extra),
                                           parsed.series + series, parsed.histograms))


def read_output(tool: str, text: str, source: str,
                logs: Mapping[str, str] | None = None) -> Imported:
    """One file's run, or a ParseError naming the file and what is wrong in it; `logs`
    are fio's per-second logs found beside the file (fio_logs_beside)."""
    try:
        imported = IMPORTERS[tool](text, source)
        imported = with_fio_logs(imported, logs or {})
    except ParseError as exc:
        raise ParseError(tool, source, f"{exc.detail}; is this {tool} output?"
                         + IMPORT_HINTS.get(tool, "")) from exc
    except SHAPE_ERRORS as exc:  # reading back parameters (fio's job options, …)
        raise ParseError(tool, source, shape_message(exc)) from exc
    if not imported.parsed.metrics and not imported.failure:
        # e.g. fio's {"jobs": [{}]}: an ok run measuring nothing (a failed run has none)
        raise ParseError(tool, source, f"it holds no measurements; is this {tool} output?"
                         + IMPORT_HINTS.get(tool, ""))
    _check_values(tool, source, imported)
    # The same per-second analysis as a live run (engine/execution.py): burst / warm-up
    # windows from the series the output carries.
    return replace(imported, parsed=with_windows(imported.parsed))


def _check_values(tool: str, source: str, imported: Imported) -> None:
    """Refuse a file with a value no disk measures (NaN, infinity, 10^400, a negative
    rate, size or time: `iops: -5` was stored as an ok run): stored, it would fail every
    later report of the database, or mislead it."""
    problem = next(valuecheck.parsed_problems(imported.parsed), None) or \
        next(valuecheck.negative_problems(imported.parsed), None)
    if problem is None and imported.started is not None:
        why = valuecheck.value_problem(imported.started)
        problem = f"timestamp: {why}" if why else None
    if problem is not None:
        raise ParseError(tool, source, f"{problem}; fix or remove that value, or leave the "
                                          "file out")


def import_files(store: Store, tool: str, target: str, files: Sequence[Path],
                 workload: str | None = None) -> tuple[int, int]:
    """Parse every file first (all or nothing), then store them: (experiment id, runs)."""
    if tool not in IMPORTERS:
        raise VolbenchError(f"cannot import {tool} output; importable tools: "
                            f"{', '.join(sorted(IMPORTERS))}")
    results: list[tuple[Path, str, Imported, dict[str, str]]] = []
    for path in files:
        # A regular file of at most MAX_FILE_BYTES, both checked before it is read.
        text = userfile.read_bytes(path, IMPORT_KIND, MAX_FILE_BYTES).decode(errors="replace")
        logs = fio_logs_beside(path) if tool == "fio" else {}
        results.append((path, text, read_output(tool, text, str(path), logs), logs))
    document = {"name": f"import:{target}", "import": {"tool": tool, "target": target,
                                                       "files": [str(p) for p in files]}}
    env = {"imported": True, "importer_host": os.uname().nodename}
    exp_id = store.begin_experiment(f"import:{target}", f"import-{time.time()}", document, env,
                                    None)
    store.save_target(exp_id, target, "imported", "imported", {"files": [str(p) for p in files]})
    for i, (path, text, imp, logs) in enumerate(results, 1):
        stamp = imp.started if imp.started is not None else path.stat().st_mtime
        store.save_run(exp_id, RunResult(
            target=target, workload=workload or tool, params=imp.params, repetition=i,
            status=Status.FAILED if imp.failure else Status.OK, started=stamp, ended=stamp,
            parsed=imp.parsed, error=imp.failure, outputs={path.name: text, **logs},
            annotations={"imported_from": str(path)}))
    store.set_status(exp_id, "done")
    return exp_id, len(results)
