"""Command line: parse, call the library, print. The only place that exits."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from volbench import __version__
from volbench.cli import options
from volbench.cli.options import add_db, add_file, add_resume, add_runs
from volbench.core.errors import Interrupted, VolbenchError
from volbench.store.redaction import clean

if TYPE_CHECKING:
    from volbench import report
    from volbench.engine import experiment
    from volbench.store.db import Store

# Commands import what they use when they run (docs/architecture.md, "Start-up"):
# `volbench --version` and `--help` load this module, argparse and options only, and
# tests/unit/test_startup.py fails if the report, a workload or a target comes along.
EXIT_RUNS_FAILED = 3
EXIT_INTERRUPTED = 130
EXIT_BUG = 70  # EX_SOFTWARE: an internal error, see crashreport


def _load(file: Path | None, paths_from: Path | None = None
          ) -> tuple[experiment.Experiment, str | None]:
    from volbench.engine import experiment

    if file is None:
        from volbench.engine.defaults import default_experiment

        return default_experiment()
    return experiment.load(file, paths_from), None


def cmd_run(args: argparse.Namespace) -> int:
    from volbench.cli.progress import progress_for
    from volbench.engine.runner import run_experiment
    from volbench.store import location
    from volbench.store.db import Store

    exp, note = _load(args.file, args.paths_from)
    if note:
        print(f"note: {note}", file=sys.stderr)
    outcome = run_experiment(exp, db=args.db, resume=args.resume or args.retry_failed,
                             repetitions=args.runs, progress=progress_for(args.quiet),
                             retry_failed=args.retry_failed, take_over=args.take_over)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(outcome.counts.items())) or "no runs"
    skipped = f", {outcome.skipped} already done" if outcome.skipped else ""
    if args.no_report:
        print(f"{counts}{skipped}; results in {args.db}")
    else:
        from volbench import report  # once the runs are done: not before the first run

        out = location.sibling(args.db, "-report.md")
        with Store(args.db) as store:
            rep = _report_for(store, [outcome.experiment_id])
            print(report.render(rep, "table"), end="")
            out.write_text(report.render(rep, "markdown"))
        print(f"\n{counts}{skipped}; results in {args.db}, report in {out}")
    bad = sum(n for s, n in outcome.counts.items() if s != "ok") + len(outcome.failed_targets)
    if any(s in ("failed", "timeout") for s in outcome.counts):
        print("failed runs can be run again (once the cause is fixed) with --retry-failed")
    return EXIT_RUNS_FAILED if bad else 0


def cmd_plan(args: argparse.Namespace) -> int:
    from volbench import targets
    from volbench.core.units import format_duration, format_size
    from volbench.engine.plan import closure, cut_summary, make_plan, sync_lines
    from volbench.engine.preflight import preflight
    from volbench.system.proc import command_line
    from volbench.targets import precondition
    from volbench.workloads import KINDS as WORKLOAD_KINDS
    from volbench.workloads.base import RunContext

    exp, note = _load(args.file)
    if note:
        print(f"note: {note}")
    plan = make_plan(exp)
    runs = plan.runs(args.runs)
    print(f"experiment {exp.name}: {len(exp.targets)} target(s), {len(plan.cases)} case(s), "
          f"{len(runs)} run(s), order {exp.order}, seed {plan.seed}")
    print(f"estimated duration: {format_duration(plan.estimate(args.runs))}; "
          f"loop devices at once: {plan.loop_devices()}; "
          f"image space: {format_size(plan.disk_space())}")
    for target in exp.targets:
        if target.precondition:
            print(f"precondition {target.name}: {precondition.summary(target)}")
    for i, run in enumerate(runs, 1):
        spec = exp.workload(run.workload)
        placeholder = targets.placeholder(exp.target(run.target))
        ctx = RunContext(placeholder, Path("<rundir>"), {"host": "<socket-dir>", "port": "<port>"},
                         steady=exp.steady)
        try:
            line = command_line(WORKLOAD_KINDS[spec.tool].command(spec, run.params, ctx).argv)
        except VolbenchError as exc:  # e.g. a path outside the target: said once, below
            line = f"(cannot run: {str(exc).splitlines()[0]})"
        tag = f"w{run.repetition}" if run.warmup else f"r{run.repetition}"
        print(f"{i:4d} {tag:>4} {run.target:<16} {line}")
    for line in sync_lines(plan):
        print(line)
    if any(w.faults for w in exp.workloads):
        from volbench.engine.faultrun import plan_lines

        for line in plan_lines(exp.workloads, exp.targets, lambda name: closure(exp, name)):
            print(line)
        for line in cut_summary(plan, args.runs):
            print(line)
    try:
        preflight(exp, plan)
    except VolbenchError as exc:
        print(f"warning: this plan cannot run here yet: {exc}")
    return 0


def _report_for(store: Store, ids: Sequence[int],
                options: report.ReportOptions | None = None) -> report.Report:
    """The report of experiments `ids`. It reads from `store` while rendering CSV or JSON
    (the complete per-run data is streamed, not held): render before closing the store."""
    from volbench import report
    from volbench.cli import storecmds

    options = options or report.ReportOptions()
    experiments = [store.experiment(i) for i in ids]
    targets = [t for i in ids for t in store.targets(i)]
    # Only the metrics the report shows; series for stalls and time-series charts.
    names = report.needed_metrics(store.metric_kinds(ids), options)
    runs = store.runs(ids, series=True, metric_names=names, kept=True)
    export = report.RunExport(lambda: store.runs_json(ids), lambda: store.metric_rows(ids))
    for line in dict.fromkeys(store.damaged):
        print(f"volbench: warning: {line}", file=sys.stderr)
    # Several experiments: each one's environment, so that a report names what changed.
    prints = [storecmds.environment_of(store, [i]) for i in ids] if len(ids) > 1 else []
    return report.build(experiments, targets, runs, options,
                        totals=store.histogram_totals(ids), export=export, fingerprints=prints)


def _experiment_ids(store: Store, wanted: Sequence[str] | None) -> list[int]:
    rows = store.experiments()
    if not rows:
        raise VolbenchError(f"{store.path} holds no experiments yet; run one with volbench run")
    if not wanted:
        return [rows[-1].id]
    if "all" in wanted:
        return [r.id for r in rows]
    ids = []
    for w in wanted:
        match = [r.id for r in rows if str(r.id) == w or r.name == w]
        if not match:
            raise VolbenchError(f"no experiment '{w}' in {store.path}; "
                                "list them with volbench report --list")
        ids.append(match[-1])
    return ids


def _check_output(output: Path | None, charts: Path | None = None) -> None:
    """Refuse, before any work, an -o or --charts that cannot be written."""
    if output is not None:
        if output.is_dir():
            raise VolbenchError(f"-o {output} is a directory; give a file name (-o "
                                f"{output / 'report.md'})")
        folder = output.parent
        if not folder.is_dir():
            raise VolbenchError(f"cannot write the report to {output}: the folder {folder} "
                                f"does not exist; create it (mkdir -p {folder}) or give "
                                "another -o")
    if charts is not None and charts.exists() and not charts.is_dir():
        raise VolbenchError(f"--charts {charts} is a file, not a directory: --charts names "
                            "the directory the chart files go to; give a new or existing "
                            "directory")


def cmd_report(args: argparse.Namespace) -> int:
    from volbench import report
    from volbench.cli import storecmds
    from volbench.store.db import Store
    from volbench.system import svgpng

    if args.png and args.charts is None:
        raise VolbenchError("--png needs --charts DIR (the directory the chart files go to)")
    _check_output(args.output, args.charts)
    with Store(args.db, read_only=True) as store:
        if args.list:
            for row in store.experiments():
                print(f"{row.id:4d}  {row.name:<24} {row.status:<12} "
                      f"{store.count_runs(row.id)} runs  {storecmds.origin(store, row)}")
            return 0
        options = report.ReportOptions(tuple(args.metrics) if args.metrics else None,
                                       baseline=args.baseline, details=args.details,
                                       series=args.series)
        rep = _report_for(store, _experiment_ids(store, args.experiment), options)
        if args.charts is not None:
            charts = report.write_charts(rep, options, args.charts)
            paths = [path for path, _, _ in charts]
            if args.png:
                paths += svgpng.all_to_png(charts)
            print(f"wrote {len(paths)} chart file(s) to {args.charts}")
            if args.format is None and args.output is None:
                return 0  # only the charts were asked for
        text = report.render(rep, args.format or "table", options)
    _emit(text, args.output)
    return 0


def _emit(text: str, output: Path | None) -> None:
    """Write `text` to `output` (-o) and say so, or print it."""
    if output is None:
        print(text, end="")
        return
    _check_output(output)
    try:
        output.write_text(text)
    except OSError as exc:
        raise VolbenchError(f"cannot write {output}: {exc.strerror}; give another -o") from exc
    print(f"wrote {output}")


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from volbench.engine.schema import schema

    _emit(json.dumps(schema(), indent=1, ensure_ascii=False) + "\n", args.output)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from volbench import report
    from volbench.cli import storecmds
    from volbench.report import setcompare
    from volbench.report.compare import compare_reports
    from volbench.store.db import Store

    options = report.ReportOptions(tuple(args.metrics) if args.metrics else None)
    sides, environments = [], []
    for path, wanted in ((args.a, args.experiment_a), (args.b, args.experiment_b)):
        with Store(path, read_only=True) as store:
            ids = _experiment_ids(store, wanted)
            sides.append(_report_for(store, ids, options))
            environments.append(storecmds.environment_of(store, ids))
    if args.output and (note := storecmds.environment_note(*environments)):
        print(note, file=sys.stderr)  # the output (its warnings) says it too, in the file
    result = compare_reports(sides[0], sides[1], str(args.a), str(args.b),
                             (environments[0], environments[1]))
    text = setcompare.render(result, args.format, options.metrics)
    _emit(text, args.output)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from volbench.config import fieldrules
    from volbench.engine.importer import import_files
    from volbench.store.db import Store

    for option, name in (("--target", args.target), ("--workload", args.workload)):
        if name is not None and (why := fieldrules.name_problem(name)) is not None:
            raise VolbenchError(f"{option} {why}; name it like xfs-1disk")
    with Store(args.db) as store:
        exp_id, n = import_files(store, args.tool, args.target, args.files, args.workload)
        failed = [r for r in store.runs([exp_id]) if r.error]
    print(f"imported {n} run(s) of {args.tool} as target {args.target} "
          f"(experiment {exp_id}) into {args.db}")
    for run in failed:  # a failed init is stored as what it was, and said so
        print(f"run {run.repetition} is a failed run: {run.error}")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from volbench.cli import storecmds
    from volbench.engine import kinds

    removed, errors = kinds.cleanup()
    for line in removed:
        print(f"removed {line}")
    for line in errors:
        print(f"could not remove {line}", file=sys.stderr)
    # After the machine's leftovers: a store that cannot be opened must not keep them.
    released, notes = storecmds.cleanup_store(args.db)
    for line in released:
        print(f"removed {line}")
    for line in notes:
        print(f"note: {line}", file=sys.stderr)
    if not removed and not released and not errors:
        print("nothing left behind by volbench")
    return 1 if errors else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from volbench.cli import doctor
    from volbench.engine import experiment

    if args.file is not None:
        return _doctor_file(args.file)
    for check in doctor.checks(experiment.DEFAULT_WORKDIR):
        mark = "ok " if check.ok else "-- "
        extra = f"  (disables: {check.disables})" if check.disables else ""
        print(f"{mark} {check.name:<24} {check.detail}{extra}")
    return 0


def _doctor_file(file: Path) -> int:
    """What one experiment needs; exit 1 when something is missing."""
    from volbench.cli.needs import install_command, needs
    from volbench.engine import experiment

    found = needs(experiment.load(file))
    for need in found:
        mark = "ok " if need.ok else "-- "
        print(f"{mark} {need.what:<20} {need.detail}  (for {need.users})")
    missing = [n for n in found if not n.ok]
    if not missing:
        print(f"everything {file} needs is here")
        return 0
    command = install_command(missing)
    if command:
        print(f"install what is missing: {command}")
    for need in missing:
        if need.fix:
            print(f"{need.what}: {need.fix}")
    return 1


def _echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_lab_run(args: argparse.Namespace) -> int:
    from volbench import report
    from volbench.cli import storecmds
    from volbench.cli.progress import TerminalProgress
    from volbench.engine import experiment
    from volbench.engine.runner import signals_raise
    from volbench.lab.labrun import run_experiment_in_lab
    from volbench.store import location
    from volbench.store.db import Store

    extra = (["--resume"] if args.resume else []) + (["--quiet"] if args.quiet else []) \
        + (["--runs", str(args.runs)] if args.runs else []) \
        + (["--retry-failed"] if args.retry_failed else [])
    exp = experiment.load(args.file)
    with storecmds.LabResults(args.db, args.workdir) as results:
        results.start(exp.spec_hash, args.resume or args.retry_failed)
        # The guest's progress drawn here; on a terminal its console goes above the live
        # line, else to stdout as before.
        progress = TerminalProgress(quiet=args.quiet)
        echo = progress.write if progress.tty else _echo
        with signals_raise():
            try:
                outcome = run_experiment_in_lab(
                    args.file, db=results.file, cli_args=extra, workdir=args.workdir,
                    timeout=args.timeout, on_output=None if args.quiet else echo,
                    on_progress=progress.event)
            finally:
                progress.end()
        boot = outcome.result.boot_seconds or 0.0
        print(f"\nlab: guest booted in {boot:.0f} s, VM ran {outcome.result.elapsed:.0f} s; "
              f"console in {outcome.console_log}")
        if outcome.db is None:
            return outcome.returncode
        if outcome.kept_aside:
            print(f"warning: {args.db} changed while the lab ran (another volbench wrote to "
                  f"it), so the lab's results were not put over it: they are in "
                  f"{outcome.db}", file=sys.stderr)
            where: location.Location = outcome.db
        else:
            if (pushed := results.bring_in()) is not None:
                print(pushed)
            where = args.db
    out = location.sibling(where, "-report.md")
    with Store(where) as store:
        ids = [r.id for r in store.experiments() if r.name == exp.name][-1:]
        rep = _report_for(store, ids)
        print(report.render(rep, "table"), end="")  # the guest reports nothing itself
        out.write_text(report.render(rep, "markdown"))
    print(f"results in {where}, report in {out}")
    return outcome.returncode


def cmd_lab_exec(args: argparse.Namespace) -> int:
    from volbench.engine.runner import signals_raise
    from volbench.lab import LabDisk, LabSpec, run_in_vm

    spec = LabSpec(disks=(LabDisk("d1"), LabDisk("d2", disk_class="fast")))
    if args.lab is not None:
        from volbench.engine import experiment
        from volbench.lab.labrun import lab_of

        spec = lab_of(experiment.load(args.lab), str(args.lab))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise VolbenchError("no command given; e.g. volbench lab exec -- lsblk")
    outdir = args.outdir or Path(f"/var/tmp/volbench/lab/exec-{os.getpid()}")
    with signals_raise():
        result = run_in_vm(spec, command, outdir, timeout=args.timeout, on_output=_echo,
                           workdir=args.workdir)
    print(f"\nlab: guest booted in {result.boot_seconds or 0:.0f} s, exit code "
          f"{result.returncode}; outputs in {outdir}", file=sys.stderr)
    return result.returncode


def cmd_lab_fetch(args: argparse.Namespace) -> int:
    from volbench.lab import ensure_kernel

    kernel = ensure_kernel(refresh=args.refresh)
    print(f"lab kernel {kernel.version}: {kernel.vmlinuz}")
    return 0


def cmd_lab_doctor(args: argparse.Namespace) -> int:
    from volbench.lab.doctor import checks

    found = checks()
    for check in found:
        mark = "ok " if check.ok else "-- "
        extra = f"  (disables: {check.disables})" if check.disables else ""
        print(f"{mark} {check.name:<24} {check.detail}{extra}")
    return 0 if all(c.ok for c in found) else 1


def add_lab_commands(sub: argparse._SubParsersAction[options.Parser]) -> None:
    text = "the lab VM: LVM, md, NFS, iSCSI with throttled disks on this machine"
    lab = sub.add_parser("lab", help=text, description=text)
    cmds = lab.add_subparsers(dest="lab_command", required=True, metavar="LAB_COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_text: str
            ) -> argparse.ArgumentParser:
        cmd = cmds.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(func=fn)
        return cmd

    run = add("run", cmd_lab_run, "run an experiment inside the lab VM its lab: section "
              "describes; results come back to --db")
    add_file(run, required=True)
    add_db(run)
    add_resume(run)
    add_runs(run)
    run.add_argument("--quiet", action="store_true", help="no live console output")
    run.add_argument("--timeout", type=float, metavar="S", help="stop the VM after S seconds "
                     "(default: lab: timeout)")
    run.add_argument("--workdir", type=Path, help="where disk images go (default "
                     "/var/tmp/volbench/lab)")
    ex = add("exec", cmd_lab_exec, "boot the lab and run one command in it (for debugging)")
    ex.add_argument("--lab", type=Path, metavar="FILE", help="use FILE's lab: section "
                    "(default: d1 standard + d2 fast, 1G each)")
    ex.add_argument("--timeout", type=float, metavar="S", help="stop the VM after S seconds")
    ex.add_argument("--outdir", type=Path, help="folder shared with the guest")
    ex.add_argument("--workdir", type=Path, help="where disk images go")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    fetch = add("fetch", cmd_lab_fetch, "download and unpack the lab kernel (cached)")
    fetch.add_argument("--refresh", action="store_true", help="look for a newer kernel")
    add("doctor", cmd_lab_doctor, "what the lab VM needs here, and what is missing")


def later(where: str) -> Callable[[argparse.Namespace], int]:
    """The command function "module:name", imported when the command runs."""
    module, _, name = where.partition(":")

    def run(args: argparse.Namespace) -> int:
        function: Callable[[argparse.Namespace], int] = getattr(import_module(module), name)
        return function(args)

    return run


def parser() -> argparse.ArgumentParser:
    p = options.Parser(prog="volbench", description="Benchmark storage layouts with "
                       "real tools, repeat with method, report what is real.")
    p.add_argument("--version", action="version", version=f"volbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], text: str
            ) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.set_defaults(func=fn)
        return cmd

    run = add("run", cmd_run, "build the layouts, run the workloads, store and report")
    add_file(run)
    add_db(run)
    add_resume(run)
    run.add_argument("--take-over", action="store_true", help="resume even though another "
                     "host's volbench holds the experiment (it is gone for good)")
    add_runs(run)
    run.add_argument("--quiet", action="store_true", help="no progress output")
    # `lab run` runs a copy of the file; its relative paths still mean the original folder.
    run.add_argument("--paths-from", type=Path, help=argparse.SUPPRESS)
    # `lab run`: the host reports from the database it gets back; the guest does not (under
    # emulation a Python import costs seconds: docs/lab.md, "Start-up in the guest").
    run.add_argument("--no-report", action="store_true", help=argparse.SUPPRESS)
    plan = add("plan", cmd_plan, "print the runs, commands and duration; run nothing")
    add_file(plan)
    add_runs(plan)
    rep = add("report", cmd_report, "report stored results")
    add_db(rep)
    rep.add_argument("--format", choices=options.REPORT_FORMATS,
                     help="table (default), markdown, csv, json or html")
    rep.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    rep.add_argument("--experiment", action="append", metavar="ID|NAME|all",
                     help="which experiment(s) (default: the latest)")
    rep.add_argument("--metrics", nargs="+", metavar="NAME", help="metrics to show, or all")
    rep.add_argument("--baseline", metavar="TARGET",
                     help="compare every target with this one (default: the experiment's "
                     "baseline:, else its first target)")
    rep.add_argument("--list", action="store_true", help="list the stored experiments")
    rep.add_argument("--details", action="store_true",
                     help="terminal: after the answer, every verdict, warning and summary "
                     "(the Markdown and HTML reports always have them)")
    rep.add_argument("--series", action="store_true",
                     help="csv, json: each run's per-second series too")
    rep.add_argument("--charts", type=Path, metavar="DIR",
                     help="also write every chart as an SVG file into DIR")
    rep.add_argument("--png", action="store_true",
                     help="with --charts: PNG files too (needs rsvg-convert: apt-get "
                     "install librsvg2-bin)")
    cmp = add("compare", cmd_compare, "compare two result sets: B against A, case by case")
    cmp.add_argument("a", type=options.db_arg, metavar="A.db",
                     help="results before (the reference; a file or postgresql:// URL)")
    cmp.add_argument("b", type=options.db_arg, metavar="B.db",
                     help="results after (the candidate; a file or postgresql:// URL)")
    cmp.add_argument("--experiment-a", action="append", metavar="ID|NAME|all",
                     help="experiment(s) in A (default: the latest)")
    cmp.add_argument("--experiment-b", action="append", metavar="ID|NAME|all",
                     help="experiment(s) in B (default: the latest)")
    cmp.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    cmp.add_argument("--metrics", nargs="+", metavar="NAME", help="metrics to compare, or all")
    cmp.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    imp = add("import", cmd_import, "store existing tool outputs as runs of a target")
    imp.add_argument("--tool", required=True, choices=options.IMPORT_TOOLS)
    imp.add_argument("--target", required=True, help="name the imported runs' target")
    imp.add_argument("--workload", help="workload name (default: the tool's name)")
    add_db(imp)
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE")
    clean = add("cleanup", cmd_cleanup, "remove what a killed volbench left (devices, "
                "mounts, …; with --db its claims in the results database)")
    add_db(clean, optional="also release the claims of killed runs in this results "
           "database")
    doc = add("doctor", cmd_doctor, "what this machine can do (or what FILE needs), and "
              "what is missing")
    doc.add_argument("file", nargs="?", type=Path,
                     help="an experiment file: list exactly what it needs and how to install it")
    fields = add("fields", later("volbench.cli.fieldtable:cmd_fields"), "the fields a target "
                 "type or workload tool takes: defaults, choices, bounds")
    fields.add_argument("kind", nargs="?", metavar="KIND",
                        help="a target type or workload tool (default: list them)")
    schema = add("schema", cmd_schema, "the experiment file as a JSON Schema, for editors "
                 "(docs/experiments.md, \"Editors\")")
    schema.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    from volbench.cli import storecmds

    storecmds.add_commands(add)
    add_lab_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except Interrupted as exc:
        print(f"volbench: {clean(str(exc))}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("volbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except VolbenchError as exc:
        print(f"volbench: {clean(str(exc))}", file=sys.stderr)  # no password, however said
        return 1
    except BrokenPipeError:
        # The reader went away (`volbench plan FILE | head`): not an error worth a
        # traceback. Point stdout at /dev/null so the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        import sqlite3

        from volbench.cli import crashreport, storecmds

        if isinstance(exc, sqlite3.DatabaseError):  # damaged, read-only or locked --db
            from volbench.store.db import database_problem

            print(f"volbench: {database_problem(getattr(args, 'db', None), exc)}",
                  file=sys.stderr)
            return 1
        # The last resort: anything else is a bug.
        if (line := storecmds.database_error(args, exc)) is not None:
            print(f"volbench: {line}", file=sys.stderr)  # a PostgreSQL --db went away
            return 1
        print(f"volbench: {crashreport.save(exc, argv)}", file=sys.stderr)
        return EXIT_BUG
    return code


if __name__ == "__main__":
    sys.exit(main())
