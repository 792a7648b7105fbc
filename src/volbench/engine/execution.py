"""One measured run: prepare the machine, start the tool, collect everything it wrote.

The runner decides *what* runs; this module does one run and turns it into a
RunResult, whatever happens (a failing tool, a parser that rejects the output,
a timeout). Interruptions propagate after the partial run is described.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from volbench.core.errors import ExperimentError, Problem, ResourceError, VolbenchError, key_lines
from volbench.core.model import Params, Parsed, RunResult, Status
from volbench.engine.faultphases import fio_offset, phase_metrics
from volbench.engine.faultrun import FaultRun, recorded
from volbench.engine.faultverify import VerifyPass
from volbench.engine.powercutrun import PowerCutRun
from volbench.stats.windows import with_windows
from volbench.system import proc, sandbox
from volbench.system.block import cgroups, diskstats, space
from volbench.system.host import activity
from volbench.system.sandbox import SandboxUser
from volbench.targets.base import Built
from volbench.workloads import fiosync
from volbench.workloads.base import Invocation, RunContext, RunOutput, WorkloadKind, WorkloadSpec

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
# Raw files larger than this are cut (and marked) so one chatty log cannot bloat the database.
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
# Output files a glob may take (pgbench's -l writes one per thread; a script's \\shell could
# write thousands in its run directory).
MAX_OUTPUT_FILES = 1024


def drop_caches() -> str | None:
    """Flush dirty pages and drop the page cache; returns why not, if it could not."""
    os.sync()
    try:
        DROP_CACHES.write_text("3")
    except OSError as exc:
        return f"caches not dropped ({exc.strerror}; needs root)"
    return None


def settle_caches(inv: Invocation) -> dict[str, str]:
    """Before a measured run: no dirty pages of earlier work left to be written back
    during it, and a cold page cache unless the tool's I/O bypasses the cache anyway
    (dropping costs 90-380 ms a run here). Returns the run's annotations: `caches` only
    when they should have been dropped and could not be (the report warns of it)."""
    if inv.uncached:
        os.sync()
        return {"caches_kept": "not dropped: the tool's I/O bypasses them (direct I/O)"}
    why = drop_caches()
    return {"caches": why} if why else {}


def prepare_rundir(rundir: Path, user: str | None) -> None:
    """The run directory exists (and belongs to `user` when the run is not root's) before the
    tool starts."""
    try:
        rundir.mkdir(parents=True, exist_ok=True)
        if user is not None:
            shutil.chown(rundir, user=user)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise ResourceError(space.output_full(rundir)) from exc
        raise ResourceError(f"cannot make the run directory {rundir}: {exc.strerror}; check "
                            "the work directory (workdir:)") from exc


def owner(inv: Invocation, box: SandboxUser | None) -> str | None:
    """Who the tool's directories belong to: the sandbox user for a sandboxed tool."""
    return box.name if inv.sandboxed and box is not None else inv.user


def prepare(inv: Invocation, box: SandboxUser | None) -> None:
    """Its directories and the files it reads, in place before its process starts. A
    sandboxed tool owns its working directory only: the folders of `outputs` it does not
    write (the service's facts) stay as they are."""
    who = owner(inv, box)
    if inv.cwd is not None:
        prepare_rundir(inv.cwd, who)
    for path in (*inv.writable, *([] if inv.sandboxed else
                                  [p.parent for p in inv.outputs.values()])):
        prepare_rundir(path, who)
    write_files(inv)


def write_files(inv: Invocation) -> None:
    """The files an invocation reads (job files, copies of scripts), in place before its
    process starts, then read back and checked (`inv.check`) from the copy the tool will
    read: what the tool reads is what was checked, whatever happened to the originals."""
    for path, text in inv.files.items():
        prepare_rundir(path.parent, None)
        path.write_text(text)
    for path, text in inv.files.items():
        copy = _read_limited(path)
        problem = "it changed after it was written" if copy != text else \
            inv.check(path, copy) if inv.check is not None else None
        if problem:
            raise ExperimentError([Problem(str(path), problem)], f"{inv.argv[0]} not started")


def _read_limited(path: Path) -> str:
    """A tool's output file, up to MAX_OUTPUT_BYTES. Never through a link, and only a
    regular file: a sandboxed tool can put anything in its run directory (a link to
    /etc/shadow, a FIFO), and volbench reads the outputs as root."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"[volbench: not read: {exc.strerror}]\n"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "[volbench: not read: not a regular file]\n"
        data = f.read(MAX_OUTPUT_BYTES + 1)
    text = data[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_OUTPUT_BYTES:
        text += f"\n[volbench: cut at {MAX_OUTPUT_BYTES} bytes]\n"
    return text


def collect_outputs(inv: Invocation, done: proc.Completed | None) -> dict[str, str]:
    """Everything a run left to parse: stdout, stderr, the invocation's output files and the
    logs its globs match (a missing file is simply absent; each read up to a size limit)."""
    outputs: dict[str, str] = {}
    if done is not None:
        outputs["stdout"] = done.stdout
        outputs["stderr"] = done.stderr
    for name, path in inv.outputs.items():
        if path.exists() or path.is_symlink():
            outputs[name] = _read_limited(path)
    if inv.cwd is not None:
        for pattern in inv.output_globs:
            for path in sorted(inv.cwd.glob(pattern))[:MAX_OUTPUT_FILES]:
                outputs[path.name] = _read_limited(path)
    return outputs


def run_invocation(inv: Invocation, built: Built, tracker: proc.ProcessTracker | None,
                   box: SandboxUser | None = None) -> proc.Completed:
    """Run one invocation to its end through system/proc.py, in the target's cgroup when it is
    throttled (a sandboxed one in `box`'s sandbox); a failure is returned, not raised."""
    argv, env, user = inv.argv, inv.env, inv.user
    if inv.sandboxed:
        if box is None or inv.cwd is None:
            raise ResourceError(f"{inv.argv[0]} runs only in a sandbox as volbench's own user, "
                                "and this run has none; run it through volbench run as root")
        argv = tuple(sandbox.argv(box, inv.argv, cwd=inv.cwd, writable=inv.writable))
        env, user = sandbox.environment(inv.cwd, inv.env), None  # bwrap drops to the user
    done = proc.run(argv, timeout=inv.timeout, cwd=inv.cwd, env=env, user=user,
                    cgroup=built.cgroup if inv.throttled else None, check=False,
                    tracker=tracker, inherit_env=not inv.sandboxed)
    return replace(done, argv=inv.argv) if inv.sandboxed else done


def _verify_pass(workload: WorkloadSpec, params: Params, ctx: RunContext,
                 tracker: proc.ProcessTracker | None) -> VerifyPass | str:
    """A faulted run's verify pass, its data file laid out with checksums (untimed), or
    why it has none (the run goes on; the annotations say why)."""
    verify = VerifyPass.for_run(workload, params, ctx)
    if isinstance(verify, VerifyPass):
        return verify.prepare(tracker) or verify
    return verify


def measure(*, target: str, workload: WorkloadSpec, kind: WorkloadKind, params: Params,
            repetition: int, warmup: bool, ctx: RunContext,
            tracker: proc.ProcessTracker | None, drop: bool,
            extra_annotations: Mapping[str, Any] | None = None,
            faults: FaultRun | None = None, cut: PowerCutRun | None = None,
            box: SandboxUser | None = None) -> RunResult:
    """Run one case once and describe the outcome as a RunResult (never raises VolbenchError).
    `faults` fire on their schedule while the process runs and are over when it ends;
    `cut` (armed already) cuts the power at its moment and counts what survived;
    a sandboxed tool runs as `box`'s user."""
    annotations: dict[str, Any] = dict(extra_annotations or {})
    built = ctx.built
    started = time.time()
    inv: Invocation | None = None
    done: proc.Completed | None = None
    try:
        moved = built.refind() if built.refind is not None else None
        if moved:  # a disk pulled and returned by an earlier run's fault
            annotations["device_moved"] = moved
        inv = kind.command(workload, params, ctx)
        prepare_rundir(ctx.rundir, owner(inv, box))
        prepare(inv, box)
        if inv.sandboxed and box is not None:
            annotations["sandbox"] = sandbox.describe(box, inv.cwd or ctx.rundir, inv.writable)
        verify = _verify_pass(workload, params, ctx, tracker) if faults is not None else ""
        if isinstance(verify, VerifyPass):
            inv = verify.measured(inv)
        if cut is not None:
            inv = cut.measured(inv, ctx.rundir)
            write_files(inv)
        if drop:
            annotations.update(settle_caches(inv))
        listed = space.entries(built.path)  # to remove a workload's files if they did not fit
        before = diskstats.read(built.devices)
        cg_before = cgroups.serviced(built.cgroup) if built.cgroup else {}
        busy = activity.snapshot()  # what else the machine does: report/noise.py reads it
        scheduled = faults if faults is not None else cut
        with scheduled if scheduled is not None else nullcontext():
            done = run_invocation(inv, built, scheduled.tap(tracker) if scheduled else tracker,
                                  box)
        annotations["activity"] = activity.record(busy, activity.snapshot(),
                                                  done.user_time + done.sys_time, built.cgroup)
        annotations["device_io"] = (diskstats.read(built.devices) - before).as_dict()
        if built.cgroup:
            after = cgroups.serviced(built.cgroup)
            annotations["cgroup_ios"] = {k: after.get(k, 0) - cg_before.get(k, 0)
                                         for k in after}
        annotations["cpu"] = {"user": done.user_time, "sys": done.sys_time}
    except VolbenchError as exc:
        if faults is not None:
            annotations["faults"] = recorded(faults)
        if cut is not None:
            annotations["power_cut"] = cut.recorded()
        return RunResult(target, workload.name, params, repetition, Status.FAILED, started,
                         time.time(), warmup, argv=inv.argv if inv else (), error=str(exc),
                         annotations=annotations)
    outputs = collect_outputs(inv, done)
    if faults is not None:
        annotations["faults"] = recorded(faults, done.started)
    if cut is not None:
        return _cut_result(target, workload, kind, params, repetition, warmup, ctx, done,
                           outputs, annotations, cut)
    status, error, parsed = Status.OK, "", Parsed()
    if done.returncode != 0:
        tail = " | ".join(key_lines(done.stderr or done.stdout))
        status, error = Status.FAILED, f"exit code {done.returncode}: {tail}"
    if done.timed_out:
        status, error = Status.TIMEOUT, f"killed after the {inv.timeout:g} s timeout"
    elif done.returncode == 0 or kind.partial_results:
        try:
            parsed = kind.parse_output(workload, params, RunOutput(
                outputs, done.elapsed, done.user_time, done.sys_time, done.returncode,
                ctx.host))
            # how the syncs' flushes fanned out over the target's disks
            parsed = fiosync.with_flushes(parsed, annotations.get("device_io"))
            if faults is None:
                parsed = with_windows(parsed)  # burst / warm-up windows beside the run's
            else:
                # A faulted run's level changes are its faults' doing: its phases tell
                # them (below). Burst windows would call the healthy start a "burst" and
                # judge the run on its faulted "sustained" level.
                offset = fio_offset(outputs, faults.zero_wall)
                annotations["faults"]["tool_offset_s"] = round(offset, 3)
                parsed = phase_metrics(parsed, faults.events, done.elapsed, outputs,
                                       faults.samples, offset)
                if isinstance(verify, VerifyPass):
                    parsed, annotations["faults"]["verify"] = verify.check(
                        parsed, faults.events, tracker)
                else:
                    annotations["faults"]["verify"] = {"skipped": verify}
        except VolbenchError as exc:
            # What could still be read (the hosts that kept running) stays with the
            # failed run; reports leave failed runs out of every statistic.
            partial = getattr(exc, "partial", None)
            if isinstance(partial, Parsed):
                parsed = partial
                error = f"{error}; {exc}" if error else str(exc)
            elif not error:  # the exit code says more than "no output to parse"
                error = str(exc)
            status = Status.FAILED
    if faults is not None and faults.unfired and status is Status.OK:
        first = faults.unfired[0]
        status = Status.FAILED  # a faulted run whose fault never came is no faulted run
        error = (f"fault {first.get('action')} at {first.get('asked_s')} s {first['error']}; "
                 "schedule faults inside the run (or make the run longer)")
    pulled = [e for e in (faults.events if faults is not None else [])
              if e.get("action") == "pull" and not e.get("error")]
    if status is Status.FAILED and pulled:
        # Writes to a pulled disk fail (ENOSPC past a device's end, EPERM, EIO): that is
        # the fault, not a full disk, and the run says so.
        error = (f"the disk was pulled at {pulled[0].get('done_s')} s (fault pull of "
                 f"{pulled[0].get('on')}): {error}")
    elif status is Status.FAILED:
        why = space.explain([error, done.stderr, done.stdout], directory=built.path,
                            device=built.block_device, rundir=ctx.rundir,
                            needed=annotations.get("working_set_bytes"), before=listed)
        if why:
            error = f"{why} [{error[:300]}]"
    return RunResult(target, workload.name, params, repetition, status, done.started,
                     done.ended, warmup, argv=done.argv, exit_code=done.returncode,
                     error=error, parsed=parsed, outputs=outputs, annotations=annotations)


def _cut_result(target: str, workload: WorkloadSpec, kind: WorkloadKind, params: Params,
                repetition: int, warmup: bool, ctx: RunContext, done: proc.Completed,
                outputs: dict[str, str], annotations: dict[str, Any],
                cut: PowerCutRun) -> RunResult:
    """A cut run: the tool's figures up to the cut (its exit code, which the cut forced,
    says nothing), and the cut's durability figures (docs/durability.md)."""
    annotations["power_cut"] = cut.recorded()
    error = cut.error or (cut.outcome.error if cut.outcome is not None else "")
    if not cut.ended_by_cut():
        error = error or "the power cut did not happen (the run ended before its moment)"
    code = 0 if cut.ended_by_cut() else done.returncode
    parsed = Parsed()
    try:
        parsed = kind.parse_output(workload, params, RunOutput(
            outputs, done.elapsed, done.user_time, done.sys_time, code, ctx.host))
    except VolbenchError as exc:
        annotations["power_cut"]["tool_output"] = str(exc)
    parsed = replace(parsed, metrics=(*parsed.metrics, *cut.metrics()))
    status = Status.FAILED if error or cut.outcome is None else Status.OK
    return RunResult(target, workload.name, params, repetition, status, done.started,
                     done.ended, warmup, argv=done.argv, exit_code=done.returncode,
                     error=error, parsed=parsed, outputs=outputs, annotations=annotations)
