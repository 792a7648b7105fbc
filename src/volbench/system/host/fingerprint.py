"""The environment fingerprint of a run: what, besides the layout, could change a result.

Host, kernel, versions (volbench, the tools), CPU model and frequency governor, memory,
the target's devices (model, size, firmware, rotational, scheduler), its filesystem and
mount options, throttling caps, the lab class, and the machine's own name for itself
(DMI: vendor, product — a cloud instance type appears there, e.g. "m5.large" or
"Google Compute Engine"), and what those say of the cloud: `cloud.provider`,
`cloud.instance_type` where DMI names it (EC2 does; GCE and Azure keep it in their metadata
services, which are network: not asked), and each device's `deviceN.cloud_disk` from its
model (EBS, instance storage, a persistent disk, a local SSD). Only local files (/proc,
/sys) are read: nothing from the network. Unreadable fields are left out, not guessed.

A fingerprint is a flat dict of `section.field` keys, so two are compared key by key
(stats/history.differences) and stored once per distinct content (its digest).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from volbench import __version__
from volbench.system import procfs

SYS_BLOCK = Path("/sys/class/block")
DMI = Path("/sys/class/dmi/id")
CPUFREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq")
# DMI fields that name the machine (never serial numbers or UUIDs: not needed, and private).
DMI_FIELDS = ("sys_vendor", "product_name", "product_version", "board_vendor", "board_name",
              "chassis_asset_tag", "bios_version")


# What a cloud's DMI says of itself: (field, value's start) -> provider. Azure's VMs carry
# this asset tag (Microsoft's documented way to tell an Azure VM from Hyper-V's own).
CLOUDS = ((("sys_vendor", "Amazon EC2"), "aws"), (("product_name", "Google Compute Engine"), "gcp"),
          (("chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77"), "azure"))
# A cloud disk's model string (as its sysfs device/model reads) -> its kind.
CLOUD_DISKS = (("Amazon Elastic Block Store", "aws-ebs"),
               ("Amazon EC2 NVMe Instance Storage", "aws-instance-store"),
               ("PersistentDisk", "gcp-persistent-disk"), ("nvme_card-pd", "gcp-persistent-disk"),
               ("EphemeralDisk", "gcp-local-ssd"), ("nvme_card", "gcp-local-ssd"),
               ("Virtual Disk", "azure-managed-disk"), ("Microsoft NVMe Direct Disk",
                                                        "azure-local-nvme"))


def _read(path: Path) -> str:
    return procfs.read_text(path).strip()


def host_part() -> dict[str, Any]:
    """The machine: name, kernel, CPU, governor, memory, DMI identity."""
    found: dict[str, Any] = {
        "host.name": platform.node(),
        "host.kernel": platform.release(),
        "host.arch": platform.machine(),
        "host.cpus": os.cpu_count() or 0,
        "volbench.version": __version__,
    }
    for line in procfs.read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            found["cpu.model"] = line.split(":", 1)[1].strip()
            break
    if governor := _read(CPUFREQ / "scaling_governor"):
        found["cpu.governor"] = governor
    memory = procfs.meminfo("MemTotal")
    if memory:
        found["memory.bytes"] = memory
    for name in DMI_FIELDS:
        if value := _read(DMI / name):
            found[f"dmi.{name}"] = value
    return found


def cloud_part(found: Mapping[str, Any]) -> dict[str, Any]:
    """The cloud the DMI fields in `found` name, and the kind of each cloud disk found
    (by model): nothing when the machine does not say (a laptop, a lab VM)."""
    out: dict[str, Any] = {}
    for (field, start), provider in CLOUDS:
        if str(found.get(f"dmi.{field}", "")).startswith(start):
            out["cloud.provider"] = provider
    if out.get("cloud.provider") == "aws" and (product := found.get("dmi.product_name")):
        out["cloud.instance_type"] = product  # EC2's DMI product name is the type (m5.large)
    for key, value in found.items():
        if key.startswith("device") and key.endswith(".model"):
            kind = next((k for model, k in CLOUD_DISKS if str(value).startswith(model)), None)
            if kind:
                out[key.removesuffix(".model") + ".cloud_disk"] = kind
    return out


def device_part(name: str, prefix: str) -> dict[str, Any]:
    """One block device from sysfs: model, size, firmware, rotational, scheduler."""
    base = SYS_BLOCK / Path(name).name
    found: dict[str, Any] = {}
    size = _read(base / "size")
    if size.isdigit():
        found[f"{prefix}.bytes"] = int(size) * 512
    for key, rel in (("model", "device/model"), ("vendor", "device/vendor"),
                     ("firmware", "device/firmware_rev"), ("firmware", "device/rev"),
                     ("rotational", "queue/rotational"), ("scheduler", "queue/scheduler"),
                     ("backing_file", "loop/backing_file")):
        value = _read(base / rel)
        if value and f"{prefix}.{key}" not in found:
            found[f"{prefix}.{key}"] = value
    return found


def mount_part(path: Path, mounts_text: str | None = None) -> dict[str, Any]:
    """The filesystem holding `path`: type, source, options (the longest mount prefix)."""
    text = procfs.read_text("/proc/self/mounts") if mounts_text is None else mounts_text
    best: list[str] | None = None
    target = str(path)
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best[1])):
            best = fields
    if best is None:
        return {}
    return {"fs.type": best[2], "fs.source": best[0], "fs.options": best[3]}


def throttle_part(cgroup: Path | None) -> dict[str, Any]:
    """The blkio caps the workload ran under, as the kernel holds them (MAJ:MIN value)."""
    found: dict[str, Any] = {}
    if cgroup is None:
        return found
    for name in ("read_iops_device", "write_iops_device", "read_bps_device",
                 "write_bps_device"):
        value = " ".join(_read(cgroup / f"blkio.throttle.{name}").split())
        if value:
            found[f"throttle.{name.removesuffix('_device')}"] = value
    return found


def gather(*, path: Path | None = None, devices: Iterable[str] = (),
           cgroup: Path | None = None,
           versions: Mapping[str, str | None] | None = None,
           extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fingerprint of runs on a target at `path` over `devices` (leaf devices).

    `versions`: tool versions already found (fio, PostgreSQL …); `extra`: what only the
    caller knows (throttling caps, lab class), stored under the keys given."""
    found = host_part()
    for tool, version in sorted((versions or {}).items()):
        if version:
            found[f"tool.{tool}"] = version
    for i, device in enumerate(sorted(devices)):
        found.update(device_part(device, f"device{i}"))
    if path is not None:
        found.update(mount_part(path))
    found.update(throttle_part(cgroup))
    found.update(cloud_part(found))
    found.update(extra or {})
    return found


def digest(fingerprint: Mapping[str, Any]) -> str:
    """A short stable name for a fingerprint's content (same content, same digest)."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]
