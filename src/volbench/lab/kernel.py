"""The lab kernel: Debian's current linux-image-amd64, downloaded once and unpacked in a cache.

    apt-cache depends linux-image-amd64    -> linux-image-6.1.0-56-amd64
    apt-get download linux-image-6.1.0-56-amd64     (into CACHE/tmp-PID, then CACHE/debs/)
    dpkg -x linux-image-….deb CACHE/tmp-PID/tree
    depmod -a -b CACHE/tmp-PID/tree 6.1.0-56-amd64   (Debian builds modules.dep at install)
    mv CACHE/tmp-PID/tree CACHE/kernels/linux-image-6.1.0-56-amd64

Each step ends in an atomic rename, so an interrupted fetch resumes at the
first step whose result is missing (a finished download is never repeated)
and a half-unpacked tree is never used. A lock file keeps two volbench
processes from fetching at once. Once a kernel is cached the lab needs no
network at all; `volbench lab fetch --refresh` looks for a newer one.

The cache is /var/lib/volbench/lab as root, else ~/.cache/volbench/lab, or
$VOLBENCH_LAB_CACHE. Not /var/cache: the guest finds the kernel's modules at
the same path over 9p, and it has its own empty tmpfs on /var/cache (and
/var/tmp, /var/log, /run). $VOLBENCH_LAB_KERNEL=/path/to/vmlinuz uses your own kernel
(with its modules in ../lib/modules/VERSION, as a package unpacks them).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from volbench.lab.errors import KernelUnavailable
from volbench.lab.guest import guest_cwd
from volbench.system import proc, procfs
from volbench.system.host.tools import require

CACHE_ENV = "VOLBENCH_LAB_CACHE"
KERNEL_ENV = "VOLBENCH_LAB_KERNEL"
META_PACKAGE = "linux-image-amd64"
_DEPENDS = re.compile(r"^\s*Depends:\s*(linux-image-\S+)\s*$", re.MULTILINE)
_UNREACHABLE = (
    "Could not resolve",
    "Failed to fetch",
    "Temporary failure",
    "Connection failed",
    "Could not connect",
    "Network is unreachable",
    "Unable to connect",
)


@dataclass(frozen=True)
class Kernel:
    package: str
    root: Path
    vmlinuz: Path

    @property
    def version(self) -> str:
        return self.vmlinuz.name.removeprefix("vmlinuz-")

    @property
    def modules(self) -> Path:
        return self.root / "lib" / "modules" / self.version


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/volbench/lab")
    return Path.home() / ".cache" / "volbench" / "lab"


def parse_depends(text: str) -> str | None:
    """The kernel image package that `apt-cache depends linux-image-amd64` names."""
    found = _DEPENDS.findall(text)
    return found[-1] if found else None


def _kernel_in(root: Path, package: str) -> Kernel | None:
    images = sorted((root / "boot").glob("vmlinuz-*"))
    return Kernel(package, root, images[-1]) if images else None


def cached(cache: Path | None = None) -> list[Kernel]:
    """Kernels already unpacked in the cache, oldest package name first."""
    base = (cache or cache_dir()) / "kernels"
    found = []
    for root in sorted(base.iterdir()) if base.is_dir() else []:
        kernel = _kernel_in(root, root.name)
        if kernel is not None:
            found.append(kernel)
    return found


def override() -> Kernel | None:
    path = os.environ.get(KERNEL_ENV)
    if not path:
        return None
    vmlinuz = Path(path)
    if not vmlinuz.is_file():
        raise KernelUnavailable(
            f"{KERNEL_ENV}={path} is not a file; point it at a vmlinuz, or "
            f"unset it to use Debian's {META_PACKAGE}"
        )
    return Kernel("custom", vmlinuz.parent.parent, vmlinuz)


def _apt_failure(what: str, done: proc.Completed) -> KernelUnavailable:
    text = (done.stderr + done.stdout).strip()
    tail = " | ".join(text.splitlines()[-3:])
    if any(s in text for s in _UNREACHABLE):
        why = (
            "the Debian package mirror is unreachable; rerun when it is (a fetch resumes), "
            f"or set {KERNEL_ENV} to a kernel you have"
        )
    elif "Unable to locate" in text or "No packages found" in text or "Can't select" in text:
        why = "apt's package lists do not know it: run `apt-get update` once, then retry"
    else:
        why = "see apt's message"
    return KernelUnavailable(f"cannot {what}: {tail or f'exit {done.returncode}'}; {why}")


def resolve_package() -> str:
    """The package name of Debian's current amd64 kernel image."""
    done = proc.run([require("apt-cache"), "depends", META_PACKAGE], timeout=120, check=False)
    package = parse_depends(done.stdout) if done.returncode == 0 else None
    if package is None:
        raise _apt_failure(f"find the package behind {META_PACKAGE}", done)
    return package


@contextlib.contextmanager
def _locked(cache: Path, wait: float = 1800) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise KernelUnavailable(
                        f"another volbench holds {cache / '.lock'} for more "
                        f"than {wait:g} s; is a fetch hanging?"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _remove_stale(cache: Path) -> None:
    """Half-done work of fetches that died (their PID is gone)."""
    for tmp in cache.glob("tmp-*"):
        pid = tmp.name.removeprefix("tmp-")
        if pid.isdigit() and not procfs.running(int(pid), None):
            shutil.rmtree(tmp, ignore_errors=True)


def _download(cache: Path, package: str, tmp: Path) -> Path:
    debs = cache / "debs"
    done_debs = sorted(debs.glob(f"{package}_*.deb"))
    if done_debs:
        return done_debs[-1]
    done = proc.run([require("apt-get"), "download", package], timeout=1800, cwd=tmp, check=False)
    fetched = sorted(tmp.glob(f"{package}_*.deb"))
    if done.returncode != 0 or not fetched:
        raise _apt_failure(f"download {package}", done)
    debs.mkdir(exist_ok=True)
    target = debs / fetched[-1].name
    os.replace(fetched[-1], target)
    return target


def _unpack(cache: Path, package: str, deb: Path, tmp: Path) -> Kernel:
    tree = tmp / "tree"
    proc.run([require("dpkg"), "-x", str(deb), str(tree)], timeout=900)
    kernel = _kernel_in(tree, package)
    if kernel is None:
        raise KernelUnavailable(f"{deb.name} holds no boot/vmlinuz-*; delete {deb} and retry")
    # Debian generates modules.dep at install time; the guest's modprobe needs it.
    proc.run([require("depmod"), "-a", "-b", str(tree), kernel.version], timeout=600)
    final = cache / "kernels" / package
    final.parent.mkdir(exist_ok=True)
    os.replace(tree, final)
    found = _kernel_in(final, package)
    assert found is not None
    return found


def ensure_kernel(*, refresh: bool = False, cache: Path | None = None) -> Kernel:
    """A bootable lab kernel: the override, else the cached one, else fetched now.

    With `refresh`, apt is asked for the current package even when one is cached.
    """
    custom = override()
    if custom is not None:
        return custom
    cache = (cache or cache_dir()).resolve()
    if guest_cwd(cache, Path("/")) != cache:
        raise KernelUnavailable(
            f"the lab kernel cache {cache} is on a path the guest does not "
            f"see (its own tmpfs); set {CACHE_ENV} elsewhere, e.g. "
            "/var/lib/volbench/lab"
        )
    have = cached(cache)
    if have and not refresh:
        return have[-1]
    package = resolve_package()
    with _locked(cache):
        for kernel in cached(cache):
            if kernel.package == package:
                return kernel
        _remove_stale(cache)
        tmp = cache / f"tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            deb = _download(cache, package, tmp)
            return _unpack(cache, package, deb, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
