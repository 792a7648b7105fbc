"""The commands over whole stores: push, pull, history, export (and their --db option).

`--db` takes a file or a postgresql:// URL, and defaults to VOLBENCH_DB, then volbench.db.
A URL is printed only redacted (location.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from volbench.cli.options import add_db, check_output, db_arg
from volbench.core.errors import VolbenchError
from volbench.store import location

if TYPE_CHECKING:
    from volbench.core.model import ExperimentRow
    from volbench.store import history as storehistory
    from volbench.store.db import Store

# The parser is built for every command (`add_commands`): what the commands use is
# imported when they run, so that `volbench --version` does not load the store.

# A drift this strong (the estimate carries a margin of ~0.03-0.06 even without any) is
# worth a line: it is why a visible wander may have no change point.
DRIFT_SHOWN = 0.3


def database_error(args: argparse.Namespace, exc: BaseException) -> str | None:
    """One line for a PostgreSQL error that escaped a command (a connection lost while
    reading, say), or None when `exc` is not one."""
    from volbench.store import pg

    where = getattr(args, "db", None)
    if not pg.is_database_error(exc):
        return None
    if isinstance(where, location.PgLocation):
        return pg.server_problem(where, exc)
    return f"PostgreSQL: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}"


def origin(store: Store, row: ExperimentRow) -> str:
    """`host, date` of an experiment, for lists: names alone clash between hosts."""
    found = store.db.execute("SELECT host FROM experiments WHERE id = ?", (row.id,)).fetchone()
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.created))
    return f"{found[0] or '?'}, {when}" if found else when


def environment_of(store: Store, ids: list[int]) -> dict[str, Any]:
    """The fingerprint most of these experiments' runs ran in ({} when none has one)."""
    # Counted by digest in the database: a report of many runs decodes one document.
    marks = ",".join("?" * len(ids))
    found = store.db.execute(
        f"SELECT f.document FROM (SELECT fingerprint, count(*) AS n FROM runs WHERE"
        f" experiment_id IN ({marks}) GROUP BY fingerprint) c JOIN fingerprints f ON"
        " f.digest = c.fingerprint ORDER BY c.n DESC, f.digest LIMIT 1", list(ids)).fetchone()
    return dict(json.loads(found[0])) if found else {}


def environment_note(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """One line naming the fingerprint fields two compared sides differ in, or None."""
    from volbench.stats.history import differences

    if not a or not b:
        return None
    found = differences(a, b)
    if not found:
        return None
    shown = "; ".join(f"{k}: {x} → {y}" for k, x, y in found[:8])
    more = f" (and {len(found) - 8} more)" if len(found) > 8 else ""
    return f"note: A and B ran in different environments: {shown}{more}"


class LabResults:
    """Where `lab run` has the guest's results come back, and what becomes of them.

    The guest writes an SQLite file, whatever --db is. For a file that file is --db
    itself (lab/labrun.py brings it back). For a postgresql:// URL it is a file of this
    run's own beside the lab's outdir, copied into the URL's store afterwards by the push
    code (by UUID: every run once, and a copy done twice adds nothing), then deleted; if
    the copy fails it stays and the message names it. With --resume the file starts with
    the URL's experiment to resume, claimed there while the lab runs."""

    def __init__(self, db: location.Location, workdir: Path | None) -> None:
        from volbench.lab.vm import DEFAULT_WORKDIR

        self.db = db
        self.file = db if isinstance(db, Path) else \
            (workdir or DEFAULT_WORKDIR).resolve() / f"lab-results-{os.getpid()}.db"
        self._claimed: int | None = None
        self._said = False  # the message naming the kept file was given

    def __enter__(self) -> LabResults:
        return self

    def start(self, spec_hash: str, resume: bool) -> None:
        """Before booting: for a URL, a fresh file, holding the experiment to resume."""
        from volbench.store import sync
        from volbench.store.db import Store

        if isinstance(self.db, Path):
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.file.unlink(missing_ok=True)  # a file of a dead PID's lab run, pushed or not
        if not resume:
            return
        with Store(self.db) as team:
            previous = team.find_resumable(spec_hash)
            if previous is None:
                return
            team.claim(previous.id)  # no one else resumes it meanwhile
            self._claimed = previous.id
            with Store(self.file) as mine:
                sync.copy(team, mine, [previous.id])

    def bring_in(self) -> str | None:
        """After the VM: for a URL, the results copied into it; a line saying so."""
        from volbench.store import pg, sync
        from volbench.store.db import Store

        if isinstance(self.db, Path):
            return None
        try:
            with Store(self.file, read_only=True) as mine, Store(self.db) as team:
                done = sync.copy(mine, team)
        except Exception as exc:
            if isinstance(exc, VolbenchError):
                why = str(exc)
            elif pg.is_database_error(exc):
                why = f"PostgreSQL: {(str(exc).strip().splitlines() or [repr(exc)])[0]}"
            else:
                raise
            self._said = True
            raise VolbenchError(f"the lab's results could not be copied into the store: "
                                f"{why}; they are kept in {self.file}: once it is back, "
                                f"volbench push {self.file} --to URL") from exc
        self.file.unlink()
        self.file.with_name(self.file.name + ".lab-lock").unlink(missing_ok=True)
        return f"{done.experiments} new experiment(s), {done.runs} new run(s) in {self.db}"

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if self._claimed is not None:
            from volbench.store import pg
            from volbench.store.db import Store

            try:
                with Store(self.db) as team:
                    team.release(self._claimed)
            except Exception as exc:
                # A claim left by a process that ended is a dead owner's: the next
                # --resume takes it over with a note. The error that matters is another.
                if not isinstance(exc, VolbenchError) and not pg.is_database_error(exc):
                    raise
        if kind is not None and not self._said and self.file != self.db \
                and self.file.exists():
            print(f"volbench: the lab's results so far are kept in {self.file}; "
                  f"volbench push {self.file} --to URL copies them to {self.db}",
                  file=sys.stderr)


def cleanup_store(db: location.Location | None) -> tuple[list[str], list[str]]:
    """`cleanup --db`: the claims killed runs left in the store, released ("removed"
    lines), and other hosts' claims named with the fix (never released from here)."""
    from volbench.store import claims
    from volbench.store.db import Store

    if db is None:
        return [], []
    with Store(db, create=False) as store:
        cleared, elsewhere = claims.clear_dead(store.db)
        names = {row.id: row.name for row in store.experiments()}
    removed = [f"the claim on experiment {i} ({names.get(i, '?')}) in {db}: its run is "
               "gone (marked interrupted; `volbench run FILE --resume` continues it)"
               for i in cleared]
    notes = [f"experiment {i} ({names.get(i, '?')}) in {db} is claimed by "
             f"{owner.describe()}: another host, so not released here; if that run is gone "
             "for good, `volbench run FILE --resume --take-over` continues it"
             for i, owner in elsewhere]
    return removed, notes


def _which(store: Store, wanted: list[str] | None) -> list[int] | None:
    if not wanted or "all" in wanted:
        return None
    rows = store.experiments()
    ids = []
    for w in wanted:
        match = [r.id for r in rows if str(r.id) == w or r.name == w]
        if not match:
            raise VolbenchError(f"no experiment '{w}' in {store.path}; `volbench report --list "
                                f"--db {store.path}` shows what is there")
        ids += match
    return ids


def _copy(source: location.Location, destination: location.Location,
          wanted: list[str] | None, verb: str) -> int:
    from volbench.store import sync
    from volbench.store.db import Store

    if source == destination:
        raise VolbenchError(f"--to {destination} is where the experiments come from; "
                            "give another database")
    with Store(source, read_only=True) as src, Store(destination) as dst:
        done = sync.copy(src, dst, _which(src, wanted),
                         lambda name, runs: print(f"{verb} {name}: {runs} new run(s)"))
    print(f"{done.experiments} new experiment(s), {done.runs} new run(s) in {destination}")
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    return _copy(args.source, args.to, args.experiment, "pushed")


def cmd_pull(args: argparse.Namespace) -> int:
    return _copy(args.source, args.to, args.experiment, "pulled")


def export_lines(store: Store, ids: list[int] | None) -> Iterator[str]:
    """One JSON object per run (the report's run shape) with its experiment and
    environment in front and the run's own fingerprint (devices, fs, caps, tools; null
    when stored without one): for Elasticsearch, BigQuery or ClickHouse loaders."""
    rows = {r[0]: r[1:] for r in store.db.execute(
        "SELECT id, uuid, host, name, created, environment FROM experiments")}
    for exp_id in ids if ids is not None else sorted(rows):
        uuid, host, name, created, environment = rows[exp_id]
        head = json.dumps({"id": uuid, "name": name, "host": host, "created": created},
                          separators=(",", ":"))
        prefix = f'{{"experiment":{head},"environment":{environment},'
        for text, printed in zip(store.runs_json([exp_id]), _run_fingerprints(store, exp_id),
                                 strict=True):
            yield f'{prefix}"fingerprint":{printed},{text[1:]}'


def _run_fingerprints(store: Store, exp_id: int) -> Iterator[str]:
    """Each run's fingerprint as JSON text, in run id order (runs_json's order); the
    stored text is canonical JSON already, and each document is read once."""
    digests = [r[0] for r in store.db.execute(
        "SELECT fingerprint FROM runs WHERE experiment_id = ? ORDER BY id", (exp_id,))]
    documents = {r[0]: r[1] for r in store.db.execute(
        "SELECT f.digest, f.document FROM fingerprints f WHERE f.digest IN (SELECT"
        " fingerprint FROM runs WHERE experiment_id = ?)", (exp_id,))}
    for digest in digests:
        yield documents.get(digest, "null") if digest else "null"


def cmd_export(args: argparse.Namespace) -> int:
    from volbench.store.db import Store

    check_output(args.output, "export")
    with Store(args.db, read_only=True) as store:
        ids = _which(store, args.experiment)
        out: TextIO = sys.stdout if args.output is None else args.output.open("w")
        try:
            n = 0
            for line in export_lines(store, ids):
                out.write(line + "\n")
                n += 1
        finally:
            if args.output is not None:
                out.close()
    if args.output is not None:
        print(f"wrote {n} run(s) to {args.output}")
    return 0


def _since(text: str) -> float:
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%d"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date like 2026-03-01, got {text!r}"
                                         ) from None


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (host.kernel=6.1.0-26-amd64), "
                                         f"got {text!r}")
    return key, value


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def history_text(lines: list[storehistory.Line]) -> str:
    """The history table: one block per line, its points, verdicts and change points."""
    out = []
    for line in lines:
        tags = ", ".join(f"{k}={v}" for k, v in sorted(line.tags.items()))
        out.append(f"{line.case}: {line.metric} ({line.unit}{', ' + tags if tags else ''}), "
                   f"{len(line.points)} experiment(s)")
        for p in line.points:
            ci = f"{p.low:.4g}–{p.high:.4g}" if p.low is not None and p.high is not None \
                else "-"
            if p.differs:
                note = "not compared, differs in " + ", ".join(
                    f"{k} {a} → {b}" for k, a, b in p.differs[:4])
            else:
                note = f"{p.verdict} ×{p.ratio:.3f}" if p.ratio is not None else p.verdict
            out.append(f"  {p.experiment:>5} {p.host:<16} {_when(p.created)}  n={p.runs:<3} "
                       f"{p.median:>12.4g}  [{ci}]  {note}".rstrip())
        for c in line.change_points:
            at = line.points[c.index]
            out.append(f"  change point: from experiment {at.experiment} ({_when(at.created)}, "
                       f"{at.host}): {c.before:.4g} → {c.after:.4g} ({c.change:+.1%}, "
                       f"p {c.p_value:.3f})")
        if not line.change_points:
            out.append("  no change point")
        if line.drift >= DRIFT_SHOWN:
            out.append(f"  experiments drift together (lag-1 autocorrelation {line.drift:.2f}): "
                       "change points were tested against the drift (docs/store.md)")
    return "\n".join(out) + "\n" if out else "no history: no measured runs match\n"


def history_html(lines: list[storehistory.Line]) -> str:
    """A page with one chart per history line (median and 95 % interval per experiment,
    x = the experiment's place in time order, each point's tooltip naming it; the stretch
    after each change point shaded with its size) and the table below."""
    # Imported here: this keeps the history page's change inside this function.
    from volbench.report import historychart, svg

    parts = []
    for i, line in enumerate(lines):
        marks = [historychart.Mark(
            n, p.median, p.low, p.high,
            f"experiment {n} (id {p.experiment}), {p.host}, {_when(p.created)}: median "
            f"{p.median:.4g} {line.unit}, " + (f"95 % interval {p.low:.4g}–{p.high:.4g}, "
                                               if p.low is not None and p.high is not None
                                               else "") + f"{p.runs} run(s)"
            + (f"; {p.verdict}" if p.verdict else "")
            + ("; not compared, differs in " + ", ".join(k for k, _, _ in p.differs[:4])
               if p.differs else ""))
            for n, p in enumerate(line.points, 1)]
        ends = [c.index for c in line.change_points[1:]] + [len(line.points)]
        segments = [historychart.Segment(c.index + 1, end, f"change {c.change:+.1%}")
                    for c, end in zip(line.change_points, ends, strict=False)]
        first, last = line.points[0], line.points[-1]
        chart = historychart.history_chart(
            f"{line.metric} across {len(marks)} experiments", f"{line.case} {dict(line.tags)}",
            line.unit, line.case, svg.color(i), marks, segments,
            f"experiment (1 = {_when(first.created)}, {len(marks)} = {_when(last.created)})")
        parts.append(chart.text)
    table = html.escape(history_text(lines))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>volbench history"
            "</title></head><body>" + "".join(f"<div>{p}</div>" for p in parts)
            + f"<pre>{table}</pre></body></html>\n")


def cmd_history(args: argparse.Namespace) -> int:
    from volbench.store import history as storehistory
    from volbench.store.db import Store

    check_output(args.output, "history")
    filters = storehistory.Filters(args.experiment, args.since, args.host,
                                   dict(args.fingerprint or []), tuple(args.allow or ()),
                                   args.series)
    with Store(args.db, read_only=True) as store:
        lines = storehistory.build(store, filters, args.metric)
    if args.format == "json":
        text = json.dumps([dataclasses.asdict(line) for line in lines], indent=1) + "\n"
    elif args.format == "html":
        text = history_html(lines)
    else:
        text = history_text(lines)
    if args.output is None:
        print(text, end="")
    else:
        args.output.write_text(text)
        print(f"wrote {args.output}")
    return 0


Adder = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]


def add_commands(add: Adder) -> None:
    """push, pull and export, through the main parser's `add`."""
    for name, fn, text in (
            ("push", cmd_push, "copy experiments from a local database to a team store "
             "(by UUID: twice adds nothing; an interrupted push resumes)"),
            ("pull", cmd_pull, "copy experiments from a team store into a local database")):
        cmd = add(name, fn, text)
        cmd.add_argument("source", type=db_arg, metavar="FROM",
                         help="the database to copy from (file or postgresql:// URL)")
        cmd.add_argument("--to", type=db_arg, required=True, metavar="DB",
                         help="the database to copy into (file or postgresql:// URL)")
        cmd.add_argument("--experiment", action="append", metavar="ID|NAME|all",
                         help="which experiment(s) (default: all)")
    hist = add("history", cmd_history, "one case's headline metric across the experiments of "
               "one name: verdicts between consecutive comparable ones, change points")
    add_db(hist)
    follow = hist.add_mutually_exclusive_group()
    follow.add_argument("--experiment", metavar="NAME",
                        help="the experiment name to follow (default: the latest "
                        "experiment's series: key, else its name)")
    follow.add_argument("--series", metavar="KEY",
                        help="follow the experiments whose file has this series: key, "
                        "whatever their names")
    hist.add_argument("--metric", help="metric (default: the first headline metric there)")
    hist.add_argument("--since", type=_since, metavar="YYYY-MM-DD")
    hist.add_argument("--host", help="only experiments run on this host")
    hist.add_argument("--fingerprint", type=_key_value, action="append", metavar="KEY=VALUE",
                      help="only runs whose environment has this (e.g. host.kernel=6.1.0)")
    hist.add_argument("--allow", action="append", metavar="KEY",
                      help="fingerprint field (or section, e.g. host) that may change "
                      "between compared experiments")
    hist.add_argument("--format", choices=("table", "json", "html"), default="table")
    hist.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    exp = add("export", cmd_export, "every run as one JSON line (ndjson) with its "
              "experiment and environment")
    add_db(exp)
    exp.add_argument("--format", choices=("ndjson",), default="ndjson")
    exp.add_argument("--experiment", action="append", metavar="ID|NAME|all",
                     help="which experiment(s) (default: all)")
    exp.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
