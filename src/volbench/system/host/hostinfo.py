"""Environment capture, once per experiment: what a reader needs to trust or redo it.

Fields under "checked" are the ones `volbench compare` warns about when two
result sets differ in them.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from volbench import __version__
from volbench.system import proc, procfs
from volbench.system.host import tools

# Tool -> argv printing its version (first line kept).
VERSION_ARGS: dict[str, list[str]] = {
    "fio": ["--version"],
    "pgbench": ["--version"],
    "initdb": ["--version"],
    "hdparm": ["-V"],
    "dd": ["--version"],
    "mkfs.xfs": ["-V"],
    "mkfs.btrfs": ["--version"],
    "mkfs.ext4": ["-V"],
    "lvm": ["version"],
    "mdadm": ["--version"],
    "git": ["--version"],
    "qemu-system-x86_64": ["--version"],
}
# The lab's guest script exports this, so a `volbench run` inside the VM records the lab's
# disks. It lives here, not in lab/, because the engine asks it and must not import the lab.
INSIDE_LAB = "VOLBENCH_LAB"
# In the lab's guest: the file `volbench run` writes its progress to, as JSON lines, for
# the host to draw on its own terminal (cli/progress.py; lab/guest.py sets it).
PROGRESS_EVENTS = "VOLBENCH_PROGRESS_EVENTS"

# Tools whose only version source is the Debian package.
PACKAGE_ONLY = {"bonnie++": "bonnie++", "targetcli": "targetcli-fb", "tgtd": "tgt"}


def inside_lab() -> bool:
    """Whether this process runs in the lab VM (the guest script says so)."""
    return os.environ.get(INSIDE_LAB) == "1"


def os_release() -> str:
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', procfs.read_text("/etc/os-release"), re.MULTILINE)
    return m.group(1) if m else platform.platform()


def cpu_model() -> str:
    m = re.search(r"^model name\s*:\s*(.*)$", procfs.read_text("/proc/cpuinfo"), re.MULTILINE)
    return m.group(1).strip() if m else platform.processor()


def memory_bytes() -> int:
    return procfs.meminfo("MemTotal")


def virtualization() -> str:
    product = procfs.read_text("/sys/class/dmi/id/product_name").strip()
    hypervisor = "hypervisor" in procfs.read_text("/proc/cpuinfo")
    return product or ("virtual machine" if hypervisor else "unknown")


def tool_version(name: str) -> str | None:
    if name in PACKAGE_ONLY:
        return package_version(PACKAGE_ONLY[name])
    path = tools.find(name)
    if path is None:
        return None
    args = VERSION_ARGS.get(name, ["--version"])
    try:
        done = proc.run([path, *args], timeout=20, check=False)
    except OSError:
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def tool_versions(names: Sequence[str]) -> dict[str, str | None]:
    """Each tool's version, asked of all the tools at once: each answer is a process start
    (~5 ms on a quiet host, 20-100 ms on a busy one), and they do not depend on each other.
    Threads, not processes: proc.run waits in a thread of its own anyway."""
    if len(names) < 2:
        return {name: tool_version(name) for name in names}
    with ThreadPoolExecutor(max_workers=min(8, len(names)),
                            thread_name_prefix="tool-version") as pool:
        return dict(zip(names, pool.map(tool_version, names), strict=True))


def package_version(package: str) -> str | None:
    if tools.find("dpkg-query") is None:
        return None
    done = proc.run(["dpkg-query", "-W", "-f", "${Version}", package], timeout=20, check=False)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def capture(tool_names: list[str], found: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The environment; `found` adds versions of programs that are not on PATH (a
    PostgreSQL installation that pgfind or the workload's pg_bin picked)."""
    uname = os.uname()
    versions = tool_versions(sorted(set(tool_names)))
    versions.update(found or {})
    return {
        "captured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hostname": socket.gethostname(),
        "checked": {
            "kernel": uname.release,
            "os": os_release(),
            "cpu": cpu_model(),
            "cpus": os.cpu_count() or 0,
            "memory_bytes": memory_bytes(),
            "tools": versions,
        },
        "kernel_build": uname.version,
        "machine": uname.machine,
        "virtualization": virtualization(),
        "python": sys.version.split()[0],
        "volbench": __version__,
        "root": os.geteuid() == 0,
        "argv": sys.argv,
    }


# Another load host's environment, read by one POSIX shell command run there (through
# ssh or a namespace): `key=value` lines, parsed by parse_probe.
REMOTE_PROBE = ["sh", "-c", (
    'echo "hostname=$(hostname)"; echo "kernel=$(uname -r)"; echo "machine=$(uname -m)"; '
    'echo "cpus=$(getconf _NPROCESSORS_ONLN)"; '
    'echo "cpu=$(sed -n "s/^model name[[:space:]]*: //p" /proc/cpuinfo | head -n 1)"; '
    'echo "meminfo=$(grep ^MemTotal: /proc/meminfo)"; '
    'echo "os=$(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME")"; '
    'echo "fio=$(fio --version 2>/dev/null | head -n 1)"')]


def parse_probe(text: str) -> dict[str, Any]:
    """REMOTE_PROBE's output in the shape of capture()'s "checked" fields."""
    raw = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    cpus = raw.get("cpus", "")
    return {
        "hostname": raw.get("hostname", ""),
        "kernel": raw.get("kernel", ""),
        "machine": raw.get("machine", ""),
        "os": raw.get("os", ""),
        "cpu": raw.get("cpu", ""),
        "cpus": int(cpus) if cpus.isdigit() else 0,
        "memory_bytes": procfs.meminfo("MemTotal", raw.get("meminfo", "")),
        "tools": {"fio": raw.get("fio") or None},
    }
