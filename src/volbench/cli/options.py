"""Command-line options that several commands share, declared once.

Each helper adds one option (or one related pair) to a parser with the same name, type,
default and help everywhere, so `run`, `lab run`, `report`, `import` and `plan` cannot drift.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NoReturn

from volbench.config import fieldrules
from volbench.core.errors import VolbenchError
from volbench.store import location, redaction

# The report formats and the tools `volbench import` reads, named here so that building the
# parser imports neither the report nor the importers (tests/unit/test_startup.py checks
# them against report.EXPORTERS and engine.importer.IMPORTERS).
REPORT_FORMATS = ("csv", "html", "json", "markdown", "table")
IMPORT_TOOLS = ("bonnie++", "dd", "fio", "hdparm", "pgbench")

DB_HELP = ("results database: a file, or postgresql://user@host/db (default: $VOLBENCH_DB, "
           "else volbench.db)")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose error messages (which quote the words they could not
    take: `--dbb postgresql://u:PW@h/db`) show no password."""

    def error(self, message: str) -> NoReturn:
        super().error(redaction.redact(message))


def repetitions(text: str) -> int:
    """--runs N: the same bounds as repeat: in an experiment file."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= n <= fieldrules.MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"must be 1 to {fieldrules.MAX_REPEAT}, got {n}")
    return n


def db_arg(text: str) -> location.Location:
    """argparse type of --db and the database arguments: a path or a PostgreSQL URL."""
    try:
        return location.parse(text)
    except location.LocationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def env_db() -> str | None:
    """$VOLBENCH_DB (None when unset or empty)."""
    return os.environ.get(location.ENV, "").strip() or None


def add_db(cmd: argparse.ArgumentParser, *, optional: str = "") -> None:
    """--db FILE|URL: the results database, defaulting to $VOLBENCH_DB (read when the
    parser is made, i.e. per command), else ./volbench.db. With `optional` (what the
    command then also does with it) the fallback is no database (None)."""
    if optional:
        cmd.add_argument("--db", type=db_arg, default=env_db(), help=(
            f"{optional} (a file, or postgresql://user@host/db; default: $VOLBENCH_DB, "
            "else none)"))
        return
    cmd.add_argument("--db", type=db_arg, default=env_db() or str(location.DEFAULT_FILE),
                     help=DB_HELP)


def add_runs(cmd: argparse.ArgumentParser) -> None:
    """--runs N: repetitions, overriding the file's repeat:."""
    cmd.add_argument("--runs", type=repetitions, metavar="N",
                     help="repetitions (overrides repeat:)")


def add_resume(cmd: argparse.ArgumentParser) -> None:
    """--resume and --retry-failed: continue an interrupted experiment."""
    cmd.add_argument("--resume", action="store_true", help="continue an interrupted run")
    cmd.add_argument("--retry-failed", action="store_true", help="--resume, and run again "
                     "the runs that failed or timed out")


def add_file(cmd: argparse.ArgumentParser, *, required: bool = False) -> None:
    """The experiment file argument; optional ones fall back to the built-in experiment."""
    if required:
        cmd.add_argument("file", type=Path, help="experiment file with a lab: section")
    else:
        cmd.add_argument("file", nargs="?", type=Path,
                         help="experiment file (default: built-in)")


def check_output(output: Path | None, what: str) -> None:
    """Refuse, before any work, an -o that cannot be written: a directory, a folder that
    does not exist (it used to end in an internal error, exit 70, after the work)."""
    if output is None:
        return
    if output.is_dir():
        raise VolbenchError(f"-o {output} is a directory; give a file name for the {what}")
    folder = output.parent
    if not folder.is_dir():
        raise VolbenchError(f"cannot write the {what} to {output}: the folder {folder} does "
                            f"not exist; create it (mkdir -p {folder}) or give another -o")
    if not os.access(folder, os.W_OK):
        raise VolbenchError(f"cannot write the {what} to {output}: {folder} is not writable "
                            "here; give another -o")

