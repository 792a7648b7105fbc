"""`volbench lab doctor`: what the lab VM needs on this machine, and what is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from volbench.lab import kernel
from volbench.lab.errors import KernelUnavailable
from volbench.lab.vm import DEFAULT_WORKDIR, VNG_VERSION, find_vng
from volbench.system import proc, procfs
from volbench.system.host import tools
from volbench.system.host.check import Check

# Host memory one lab VM takes with the default 2 GiB guest (QEMU, TCG cache, vng).
VM_HOST_BYTES = 3 * 1024**3


def _tool(name: str, why: str) -> Check:
    path = tools.find(name)
    package = tools.TOOLS[name].package if name in tools.TOOLS else name
    return Check(
        f"lab: {name}",
        path is not None,
        path or f"missing: apt-get install {package}",
        "" if path else why,
    )


def _vng() -> Check:
    path = find_vng()
    if path is None:
        return Check(
            "lab: vng",
            False,
            f"missing: pip install 'volbench[lab]' (virtme-ng=={VNG_VERSION})",
            "the lab VM",
        )
    done = proc.run([path, "--version"], timeout=60, check=False)
    version = (done.stdout or done.stderr).strip().splitlines()[:1]
    text = version[0] if version else "unknown version"
    ok = VNG_VERSION in text.split()
    return Check(
        "lab: vng",
        ok,
        f"{path}: {text}"
        + (
            ""
            if ok
            else f" (volbench is tested with {VNG_VERSION}: pip install virtme-ng=={VNG_VERSION})"
        ),
        "" if ok else "a verified lab VM",
    )


def _busybox() -> Check:
    path = tools.find("busybox")
    if path is None or tools.find("file") is None:
        return _tool("busybox", "the lab VM (its initramfs)")
    done = proc.run(["file", "-L", path], timeout=30, check=False)
    static = "statically linked" in done.stdout or "static-pie linked" in done.stdout
    return Check(
        "lab: busybox",
        static,
        path + (" (static)" if static else " is not static: apt-get install busybox-static"),
        "" if static else "the lab VM (vng refuses a dynamic busybox)",
    )


def _kernel() -> Check:
    try:
        custom = kernel.override()
    except KernelUnavailable as exc:
        return Check("lab: kernel", False, str(exc), "the lab VM")
    if custom is not None:
        return Check("lab: kernel", True, f"{custom.vmlinuz} (from ${kernel.KERNEL_ENV})")
    have = kernel.cached()
    if have:
        return Check("lab: kernel", True, f"{have[-1].package} cached in {kernel.cache_dir()}")
    return Check(
        "lab: kernel",
        False,
        f"not cached yet; `volbench lab fetch` downloads "
        f"Debian's {kernel.META_PACKAGE} (~70 MB) into {kernel.cache_dir()}",
        "the lab VM until fetched (the first lab run fetches it)",
    )


def _accel() -> Check:
    if not Path("/dev/kvm").exists():
        return Check(
            "lab: acceleration",
            True,
            "no /dev/kvm: software emulation (TCG); slow "
            "CPU, exact disk caps (keep them at or below 5000 IOPS)",
        )
    usable = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return Check(
        "lab: acceleration",
        True,
        "/dev/kvm is present"
        + ("" if usable else " (not writable by you)")
        + "; the lab uses software emulation (TCG) unless "
        "lab: {accel: kvm} (on some hosts /dev/kvm cannot boot a normal kernel)",
    )


def _memory() -> Check:
    available = procfs.meminfo("MemAvailable")
    ok = available >= VM_HOST_BYTES
    return Check(
        "lab: memory",
        ok,
        f"{available / 2**30:.1f} GiB available; one VM with a "
        f"2 GiB guest takes ~{VM_HOST_BYTES / 2**30:.0f} GiB",
        "" if ok else "the lab VM at its default size (lower lab: memory)",
    )


def _space(workdir: Path) -> Check:
    probe = workdir
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    ok = free > 4 * 2**30
    return Check(
        "lab: disk space",
        ok,
        f"{free / 2**30:.1f} GiB free under {probe} for lab "
        "disk images (sparse: they take what the guest writes)",
        "" if ok else "large lab disks",
    )


def checks(workdir: Path = DEFAULT_WORKDIR) -> list[Check]:
    return [
        _tool("qemu-system-x86_64", "the lab VM"),
        _vng(),
        _busybox(),
        _tool("file", "the lab VM (vng checks busybox with it)"),
        _tool("depmod", "unpacking the lab kernel"),
        _tool("apt-get", "downloading the lab kernel"),
        _tool("dpkg", "unpacking the lab kernel"),
        _kernel(),
        _accel(),
        _memory(),
        _space(workdir),
    ]


def summary() -> Check:
    """One line for `volbench doctor`: can the lab boot here?"""
    missing = [
        c.name.removeprefix("lab: ")
        for c in checks()
        if not c.ok and c.name not in ("lab: kernel", "lab: memory", "lab: disk space")
    ]
    if missing:
        return Check(
            "lab VM",
            False,
            "missing: " + ", ".join(missing) + " (see volbench lab doctor)",
            "volbench lab (LVM, md, NFS, iSCSI here)",
        )
    return Check("lab VM", True, "can boot (volbench lab doctor for details)")
