"""The verify pass of a faulted fio run: was anything written before or during the fault lost?

fio's own verify phase cannot do it: every volbench run is `time_based`, and fio neither
runs a verify phase after a time_based write job nor lets `verify_only` replay one. So the
check is three steps around the measured process, all on volbench's data file:

    before  (untimed) the file rewritten with a crc32c header every B bytes
            fio --rw=write --bs=L --verify=crc32c --do_verify=0 --verify_interval=B
    during  the measured job writes headers too (write and mixed jobs only):
            --verify=crc32c --do_verify=0     (a pure read job gets nothing: with
            verify set, fio would check every read during the measured run)
            random ones also --norandommap --io_size=1P (ONE_PASS below)
    after   (untimed) every block read back and checked, on past the first bad one
            fio --rw=read --bs=L --verify=crc32c --verify_interval=B --continue_on_error=verify

B is the workload's block size, so a block the measured job overwrote carries a header of
the same length as one the layout wrote; L is B times what fits in 1 MiB (large reads keep
the pass short on a slow disk). Each header holds its offset and the checksum of its
block: a block lost, stale from another offset, or damaged fails. fio prints one line per
bad block ("crc32c: verify failed at file F offset O, length B", "verify: bad magic
header ..."), which is what is counted; a read that fails stops the job and the bytes it
did not read are reported as unchecked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from volbench.core import units
from volbench.core.model import Metric, Params
from volbench.workloads import fioclient
from volbench.workloads.base import Invocation, RunContext

VERIFY = "crc32c"
LAYOUT_BYTES = 1024 * 1024
# Verify lines of fio 3.33 (verify.c): "<type>: verify failed at file F offset O, length N"
# and "verify: bad <what> ... at file F offset O, length N".
_BAD = re.compile(r"^(?:\w+: verify failed|verify: bad [^\n]*?) at file (?P<file>.+?) "
                  r"offset (?P<offset>\d+), length (?P<length>\d+)", re.MULTILINE)
WRITING = ("write", "randwrite", "rw", "readwrite", "randrw", "trimwrite")
OUTPUT = "verify.json"
# A write job with verify set saves its verify state to local-JOB-N-verify.state in its
# working directory by default (found in the directory a test ran from): not wanted.
NO_STATE = ("--verify_state_save=0",)
# fio's error for a verify failure (EILSEQ): the blocks are counted from its lines.
EILSEQ = 84
LAYOUT_OUTPUT = "verify-layout.json"


@dataclass(frozen=True)
class Verified:
    """What the read-back found: distinct bad blocks (offset, length), bytes read of the
    bytes asked, and fio's error for a read that stopped the job (0: none)."""

    bad: tuple[tuple[int, int], ...]
    checked_bytes: int
    expected_bytes: int
    error: int = 0
    exit_code: int = 0

    @property
    def unchecked_bytes(self) -> int:
        """Bytes the pass could not read (a read error stopped it)."""
        return max(0, self.expected_bytes - self.checked_bytes)

    @property
    def nothing_lost(self) -> bool:
        """Every byte read back and every header and checksum right."""
        return not self.bad and not self.unchecked_bytes and self.exit_code == 0

    def words(self) -> str:
        """The verdict as the report says it."""
        if self.nothing_lost:
            return f"nothing lost ({units.format_size(self.checked_bytes)} checked)"
        parts = []
        if self.bad:
            lost = sum(length for _, length in self.bad)
            parts.append(f"{len(self.bad)} blocks ({units.format_size(lost)}) lost or "
                         f"damaged, first at offset {self.bad[0][0]}")
        if self.unchecked_bytes:
            parts.append(f"{units.format_size(self.unchecked_bytes)} unreadable"
                         + (f" (fio error {self.error})" if self.error else ""))
        if not parts:
            parts.append(f"the verify pass failed (exit code {self.exit_code})")
        return "; ".join(parts)


def block_size(params: Params) -> int | None:
    """The verify interval: the workload's one block size (None for ranges or splits,
    which fio writes with headers of varying length that one interval cannot read)."""
    try:
        return units.parse_size(str(params.get("bs", "4k")))
    except (ValueError, TypeError):
        return None


def unsupported(jobfile: bool, params: Params, ctx: RunContext) -> str:
    """Why the verify pass cannot run for this case ('' when it can)."""
    if jobfile:
        return "a job file's writes are its own: no verify pass (use a matrix case)"
    if fioclient.clients(ctx) is not None:
        return "no verify pass on a multi-host target"
    if block_size(params) is None or "size" not in params:
        return f"no verify pass for bs {params.get('bs')!r}: give one block size"
    return ""


def _read_size(interval: int) -> int:
    return interval * max(1, LAYOUT_BYTES // interval)


def layout(filename: str, params: Params, ctx: RunContext) -> Invocation:
    """The untimed rewrite of the data file with a header every block (before the run)."""
    interval = block_size(params) or 4096
    out = ctx.rundir / LAYOUT_OUTPUT
    argv = ("fio", "--name=verify-layout", f"--filename={filename}", f"--size={params['size']}",
            "--rw=write", f"--bs={_read_size(interval)}", "--direct=1", "--ioengine=libaio",
            "--iodepth=8", f"--verify={VERIFY}", "--do_verify=0",
            f"--verify_interval={interval}", *NO_STATE, "--end_fsync=1",
            "--output-format=json", f"--output={out}")
    return Invocation(argv, timeout=_timeout(params), cwd=ctx.rundir, throttled=False,
                      outputs={LAYOUT_OUTPUT: out})


# With verify set, fio 3.33's do_io() returns after each `size` bytes issued and ends a
# time_based job when none of them completed ("stop job if we failed doing any IO"):
# a fault that fails every write for one pass over the file (dm `errors`, an iSCSI path
# down past its replacement_timeout) ended the run there, exit code 0. A random job
# without a random map goes on to `io_size` bytes before such a return, so it runs its
# time (tests/data/fio/3.33/error-pass.capture.sh). Its offsets are then drawn with
# repeats instead of each block once per pass; with do_verify=0 fio keeps no list of them.
ONE_PASS = ("--norandommap", "--io_size=1P")
RANDOM_WRITING = ("randwrite", "randrw")


def measured_options(params: Params) -> tuple[str, ...]:
    """What the measured job adds so its writes carry headers (nothing for pure reads);
    a random job also runs its whole time through errors (ONE_PASS)."""
    if params.get("rw") not in WRITING:
        return ()
    endless = ONE_PASS if params.get("rw") in RANDOM_WRITING else ()
    return (f"--verify={VERIFY}", "--do_verify=0", *NO_STATE, *endless)


def command(filename: str, params: Params, ctx: RunContext) -> Invocation:
    """The untimed read-back of the whole data file after the run, every block checked."""
    interval = block_size(params) or 4096
    out = ctx.rundir / OUTPUT
    argv = ("fio", "--name=verify", f"--filename={filename}", f"--size={params['size']}",
            "--rw=read", f"--bs={_read_size(interval)}", f"--verify={VERIFY}",
            f"--verify_interval={interval}", "--direct=1", "--ioengine=libaio", "--iodepth=4",
            "--continue_on_error=verify", "--output-format=json", f"--output={out}")
    return Invocation(argv, timeout=_timeout(params), cwd=ctx.rundir, throttled=False,
                      outputs={OUTPUT: out})


def _timeout(params: Params) -> float:
    # A hard NFS mount waits for its server: allow a slow disk (1 MiB/s) and a minute.
    return 60.0 + units.parse_size(str(params["size"])) / (1024**2)


def parse(json_text: str, console: str, expected_bytes: int, exit_code: int) -> Verified:
    """The verify job's JSON and console output as found blocks and bytes read."""
    bad = tuple(dict.fromkeys((int(m["offset"]), int(m["length"]))
                              for m in _BAD.finditer(console)))
    checked, error = 0, 0
    try:
        jobs = json.loads(json_text[json_text.find("{"):]).get("jobs", [])
        checked = sum(int(j.get("read", {}).get("io_bytes", 0)) for j in jobs)
        error = next((int(j["error"]) for j in jobs if j.get("error") and
                      int(j["error"]) != EILSEQ), 0)
    except (ValueError, TypeError, AttributeError, KeyError):
        exit_code = exit_code or -1
    return Verified(bad, checked, expected_bytes, error, exit_code)


def metrics(found: Verified, expected_loss: str) -> list[Metric]:
    """`verify_errors` (bad blocks; None when bytes could not be read), `verify_checked_bytes`;
    the note says the verdict and whether a loss was expected."""
    errors = None if found.unchecked_bytes else float(len(found.bad))
    note = found.words() + (f" (expected: {expected_loss})" if expected_loss and
                            not found.nothing_lost else "")
    return [Metric("verify_errors", errors, "", note=note),
            Metric("verify_checked_bytes", float(found.checked_bytes), "B")]


def expected_bytes(params: Params) -> int:
    """The bytes the verify pass reads (the case's size)."""
    return units.parse_size(str(params["size"]))
