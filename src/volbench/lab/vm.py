"""Boot the lab VM, run one command in it, bring its outputs back, leave nothing running.

    result = run_in_vm(spec, ["fio", "--name=x", …], outdir, timeout=600)
    result.returncode, result.console, result.boot_seconds

virtme-ng (vng, PyPI, pinned in the `lab` extra) boots Debian's kernel
(kernel.py) with the host's filesystem as a read-only 9p root; QEMU gets one
fresh, sparse raw image per lab disk, each throttled by its class
(`-drive …,throttling.iops-total=500`) and named by its serial
(/dev/disk/by-id/virtio-NAME in the guest). `outdir` is the guest's only
writable path to the host (vng --rwdir). Everything is journaled: the vng
process group (QEMU included) is ended on a timeout, Ctrl-C or SIGTERM, the
images are removed, and `volbench cleanup` does both after a SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import volbench
from volbench.config.lab import LabSpec
from volbench.core.errors import Interrupted
from volbench.lab import diskopts, guest
from volbench.lab.console import Console
from volbench.lab.errors import LabBootError, LabError, LabTimeout, console_tail
from volbench.lab.faultbridge import FaultBridge
from volbench.lab.kernel import Kernel, ensure_kernel
from volbench.system import journal, proc
from volbench.system.block.devices import create_image
from volbench.system.block.mounts import make_tree
from volbench.system.host import tools
from volbench.system.journal import Scope
from volbench.system.recipe import Recipe

DEFAULT_WORKDIR = Path("/var/tmp/volbench/lab")
VNG_VERSION = "1.42"
_counter = iter(range(1, 1_000_000))
# Seconds an interrupted guest gets to stop its own work cleanly before the VM is killed.
STOP_GRACE = 60.0


@dataclass(frozen=True)
class LabResult:
    returncode: int
    console: str
    outdir: Path
    # Host seconds from starting vng until the guest ran its first command, and in all.
    boot_seconds: float | None
    elapsed: float
    # Guest uptime (s) when it started the command, and modules it could not load.
    guest_uptime: float | None = None
    modules_missing: tuple[str, ...] = ()

    def check(self) -> LabResult:
        if self.returncode != 0:
            raise LabError(
                f"the command in the lab VM exited with {self.returncode}"
                + console_tail(self.console)
            )
        return self


def find_vng() -> str | None:
    """vng next to this Python (the virtualenv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "vng"
    if beside.exists():
        return str(beside)
    return shutil.which("vng")


def require_vng() -> str:
    found = find_vng()
    if found is None:
        raise LabError(
            "virtme-ng (vng) is not installed; install the lab extra: "
            f"pip install 'volbench[lab]' (virtme-ng=={VNG_VERSION})"
        )
    return found


def qemu_options(spec: LabSpec, images: Sequence[Path], qmp: Path | None = None) -> list[str]:
    """QEMU arguments for the lab disks (plus software-emulation tuning), and the QMP
    socket `qmp` the host's fault bridge changes disk throttles through."""
    opts: list[str] = []
    if qmp is not None:
        opts += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    if spec.accel == "tcg":
        # A smaller translation-block cache: the default takes ~1 GiB of host RAM.
        opts += ["-accel", "tcg,tb-size=256"]
    for bridge in diskopts.bridges(spec):
        opts += ["-device", bridge]
    for i, (_, image) in enumerate(zip(spec.disks, images, strict=True)):
        opts += diskopts.qemu_disk_options(spec, i, image)
    # The host's root once more, read-only, for the guest to mount with its page cache on
    # (lab/guest.py: the folders every process reads; vng's own root share caches nothing).
    opts += ["-fsdev", "local,id=vbro,path=/,security_model=none,readonly=on,multidevs=remap",
             "-device", f"virtio-9p-pci,fsdev=vbro,mount_tag={guest.CACHED_TAG}"]
    return opts


def vng_argv(
    vng: str, spec: LabSpec, kernel: Kernel, outdir: Path, qemu: Sequence[str], command: str
) -> list[str]:
    argv = [vng, "--run", str(kernel.vmlinuz), "--force-9p"]
    if spec.accel == "tcg":
        argv.append("--disable-kvm")
    return [
        *argv,
        "-m",
        f"{spec.memory // 1024**2}M",
        "-p",
        str(spec.cpus),
        f"--rwdir={outdir}",
        f"--qemu-opts={' '.join(qemu)}",
        "--exec",
        command,
    ]


def _safe_path(path: Path) -> None:
    # vng splits --qemu-opts on spaces and QEMU splits -drive on commas.
    if any(c in str(path) for c in " \t,'\""):
        raise LabError(
            f"{path}: the lab's work directory may not contain spaces, commas or "
            "quotes (QEMU options); choose another workdir"
        )


def _read_float(path: Path) -> float | None:
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def _scope(scope: Scope | None) -> Iterator[Scope]:
    if scope is not None:
        yield scope
        return
    with journal.opened("lab vm") as jrnl, jrnl.scope() as own:
        yield own


def _prepare_outdir(outdir: Path) -> Path:
    lab = outdir / ".lab"
    lab.mkdir(parents=True, exist_ok=True)
    for name in (*guest.MARKERS, "console.log", "run.sh"):
        (lab / name).unlink(missing_ok=True)
    return lab


def _check_tools() -> str:
    for name in ("qemu-system-x86_64", "busybox", "file", "depmod"):
        tools.require(name)
    return require_vng()


def run_in_vm(
    spec: LabSpec,
    argv: Sequence[str],
    outdir: Path,
    *,
    timeout: float | None = None,
    boot_timeout: float | None = None,
    workdir: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    on_output: Callable[[str], None] | None = None,
    scope: Scope | None = None,
    kernel: Kernel | None = None,
) -> LabResult:
    """Boot the lab described by `spec`, run `argv` in the guest as root, and stop the VM.

    `outdir` (created if missing) is shared with the guest; the guest script, its
    markers and the console log land in `outdir/.lab/`. The command starts in `cwd`
    (default: the current directory, or `outdir` where the guest has no host files).
    Raises LabBootError when the guest never ran the command, LabTimeout when it ran
    too long (the VM is stopped either way); a failing command is a returncode.
    """
    vng = _check_tools()
    kernel = kernel or ensure_kernel()
    guest.compile_package(Path(volbench.__file__).parent)
    outdir = outdir.resolve()
    _safe_path(outdir)
    lab = _prepare_outdir(outdir)
    run_sh = lab / "run.sh"
    run_sh.write_text(
        guest.script(
            lab,
            argv,
            cwd=guest.guest_cwd(cwd or Path.cwd(), outdir),
            modules=spec.modules,
            env=env or {},
            bindir=Path(sys.executable).parent,
        )
    )
    with _scope(scope) as sc:
        base = (workdir or DEFAULT_WORKDIR).resolve()
        _safe_path(base)
        base.mkdir(parents=True, exist_ok=True)
        rundir = make_tree(sc, base / f"vm-{os.getpid()}-{next(_counter)}")
        recipe = Recipe(tracker=sc)
        images = [create_image(sc, recipe, rundir / f"{d.name}.raw", d.size) for d in spec.disks]
        qmp = rundir / "qmp.sock"
        argv_vng = vng_argv(vng, spec, kernel, outdir, qemu_options(spec, images, qmp),
                            f"sh {run_sh}")
        # Lab-disk faults asked by the guest (faults/labdisk.py), run through QMP.
        bridge = FaultBridge(spec, lab / guest.CHANNEL, qmp, images).start()
        try:
            return _boot_and_wait(
                spec,
                argv_vng,
                sc,
                rundir,
                lab,
                outdir,
                on_output,
                timeout or spec.timeout,
                boot_timeout or spec.boot_timeout,
            )
        finally:
            bridge.stop()


def _boot_and_wait(
    spec: LabSpec,
    argv: list[str],
    scope: Scope,
    rundir: Path,
    lab: Path,
    outdir: Path,
    on_output: Callable[[str], None] | None,
    timeout: float,
    boot_timeout: float,
) -> LabResult:
    console = Console(rundir / "console.fifo", lab / "console.log", on_output)
    # vng runs `virtme-run` from PATH: the one installed beside it.
    env = {"PATH": f"{Path(argv[0]).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    started = time.monotonic()
    try:
        vm = proc.start(argv, log=console.fifo, env=env, tracker=scope)
    except BaseException:
        console.close(0)
        raise
    console.start()
    try:
        booted, failure = _watch(vm, lab / "booted", started, timeout, boot_timeout)
    except (Interrupted, KeyboardInterrupt):
        _ask_guest_to_stop(vm, lab)
        raise
    finally:
        vng_code = vm.stop()
        text = console.close()
    if booted is None and (lab / "booted").exists():
        booted = time.monotonic() - started
    if failure is not None:
        raise type(failure)(str(failure) + console_tail(text))
    return _result(spec, lab, outdir, text, vng_code, booted, time.monotonic() - started)


def _ask_guest_to_stop(vm: proc.Background, lab: Path) -> None:
    """Interrupted: let a guest that watches for it (guest.stop_when_asked) stop cleanly.

    A second Ctrl-C during the grace period ends the wait at once (the VM is then killed).
    """
    (lab / guest.STOP).touch()
    deadline = time.monotonic() + STOP_GRACE
    while vm.popen.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)


def _watch(
    vm: proc.Background, marker: Path, started: float, timeout: float, boot_timeout: float
) -> tuple[float | None, LabError | None]:
    """Wait for the VM to end: (seconds until the guest's first command, why it was stopped)."""
    booted: float | None = None
    while vm.popen.poll() is None:
        now = time.monotonic()
        if booted is None and marker.exists():
            booted = now - started
        if booted is None and now - started > boot_timeout:
            return None, LabBootError(
                f"the lab VM did not boot within {boot_timeout:g} s (no first command in the "
                "guest) and was stopped; raise lab: boot_timeout if the machine is slow"
            )
        if now - started > timeout:
            return booted, LabTimeout(
                f"the lab VM ran longer than {timeout:g} s and was stopped; raise lab: "
                "timeout (or --timeout)"
            )
        time.sleep(0.1)
    return booted, None


def _result(
    spec: LabSpec,
    lab: Path,
    outdir: Path,
    console: str,
    vng_code: int,
    booted: float | None,
    elapsed: float,
) -> LabResult:
    if not (lab / "booted").exists():
        raise LabBootError(
            f"the lab VM stopped (vng exit {vng_code}) before the guest ran "
            "the command; see `volbench lab doctor`" + console_tail(console)
        )
    code = _read_float(lab / "exitcode")
    if code is None:
        raise LabError(
            f"the guest stopped (vng exit {vng_code}) before the command finished "
            "(kernel panic? out of memory? raise lab: memory)" + console_tail(console)
        )
    missing = (
        (lab / "modules-missing").read_text().split() if (lab / "modules-missing").exists() else []
    )
    return LabResult(
        int(code), console, outdir, booted, elapsed, _read_float(lab / "booted"), tuple(missing)
    )
