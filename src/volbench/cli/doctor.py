"""What this machine can do for volbench, and what each missing piece disables."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from volbench.lab import doctor as lab_doctor
from volbench.system import procfs
from volbench.system.block import cgroups
from volbench.system.host import pgfind, tools
from volbench.system.host.check import Check


def _loop_check() -> Check:
    if not Path("/dev/loop-control").exists():
        return Check("loop devices", False, "/dev/loop-control missing (modprobe loop)",
                     "loopdisk and btrfs targets")
    max_loop = procfs.read_text("/sys/module/loop/parameters/max_loop").strip() or "?"
    busy = sum(1 for p in Path("/sys/block").glob("loop*")
               if procfs.read_text(str(p / "loop/backing_file")).strip())
    total = sum(1 for _ in Path("/sys/block").glob("loop*"))
    return Check("loop devices", True, f"{total - busy} of {total} free (max_loop={max_loop})")


def _kernel_feature(name: str, present: bool, detail: str, disables: str) -> Check:
    return Check(name, present, detail if present else f"not in this kernel ({detail})",
                 "" if present else disables)


def _postgres_check() -> Check:
    """The installation pgbench workloads use unless they give pg_bin."""
    try:
        install = pgfind.locate()
    except pgfind.PostgresMissing as exc:
        return Check("PostgreSQL", False, str(exc), "pgbench workloads (without pg_bin)")
    version = pgfind.version(install.program("postgres"))
    return Check("PostgreSQL", True, f"{version} in {install.bindir} ({install.found_by})")


def checks(workdir: Path | None = None) -> list[Check]:
    found: list[Check] = []
    root = os.geteuid() == 0
    found.append(Check("root", root, "running as root" if root else "not root",
                       "" if root else "every target except directory; throttling; cache drop"))
    found.append(_loop_check())
    why = cgroups.available()
    found.append(Check("blkio throttling", why is None, why or "cgroup v1 blkio throttle",
                       "" if why is None else "disk classes (limits:)"))
    filesystems = procfs.read_text("/proc/filesystems")
    misc = procfs.read_text("/proc/misc")
    found.append(_kernel_feature("device-mapper", "device-mapper" in misc or
                                 Path("/sys/module/dm_mod").exists(), "dm_mod",
                                 "LVM targets on this host (use the lab VM)"))
    found.append(_kernel_feature("md RAID", Path("/proc/mdstat").exists(), "md_mod",
                                 "mdraid targets on this host (use the lab VM)"))
    found.append(_kernel_feature("NFS", "nfs" in filesystems.split(), "nfs/nfsd",
                                 "nfs targets on this host (use the lab VM)"))
    found.append(_kernel_feature("zram", Path("/sys/class/zram-control").exists(), "zram",
                                 "zram targets"))
    kvm = Path("/dev/kvm").exists()
    found.append(Check("KVM", kvm, "/dev/kvm present" if kvm else
                       "no /dev/kvm: the lab VM uses software emulation (TCG), slower CPU "
                       "but exact disk throttling", ""))
    drop = os.access("/proc/sys/vm/drop_caches", os.W_OK)
    found.append(Check("drop caches", drop, "/proc/sys/vm/drop_caches writable" if drop
                       else "cannot write /proc/sys/vm/drop_caches",
                       "" if drop else "dropping caches between runs"))
    if workdir is not None:
        probe = workdir if workdir.exists() else workdir.parent
        if probe.exists():
            free = shutil.disk_usage(probe).free
            found.append(Check("work space", free > 4 * 2**30,
                               f"{free / 2**30:.1f} GiB free under {probe}",
                               "" if free > 4 * 2**30 else "large disk images"))
    found.append(lab_doctor.summary())
    found.append(_postgres_check())
    for tool in tools.TOOLS.values():
        if tool.name in pgfind.PROGRAMS:  # one line for the installation, above
            continue
        path = tools.find(tool.name)
        found.append(Check(f"tool {tool.name}", path is not None,
                           path or f"missing: apt-get install {tool.package}",
                           "" if path else tool.purpose))
    return found
