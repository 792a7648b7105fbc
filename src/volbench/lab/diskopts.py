"""What QEMU is told about each lab disk: at boot (`-drive` + `-device`) and when a pulled
disk comes back (QMP `blockdev-add` + `device_add`, lab/faultbridge.py).

Disk number i is the drive `labdisk<i>` (its BlockBackend, throttled by its class) and
the virtio-blk device `labdev<i>` (serial = the disk's name, so the guest sees
/dev/disk/by-id/virtio-NAME). Disks sit behind PCI bridges `labbr<b>` at fixed slots, so
a disk put back after a pull lands where it was. A legacy `-drive` is deleted with its
device (QEMU's auto-delete), so a disk that comes back gets a new block node
`labnode<i>` on the same image with the same cache settings, and its class's throttle
is set again on the device (block_set_io_throttle by device id, group `labdisk<i>`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from volbench.config.lab import DiskClass, LabSpec

# Disks go behind PCI bridges: bus 0 has room for ~21 devices next to vng's own.
SLOTS_PER_BRIDGE = 31


def drive_id(index: int) -> str:
    """The -drive id (BlockBackend and throttle group) of lab disk number `index`."""
    return f"labdisk{index}"


def device_id(index: int) -> str:
    """The qdev id of lab disk number `index`'s virtio-blk device."""
    return f"labdev{index}"


def backend_path(index: int) -> str:
    """The QOM path of the disk's virtio backend: block_set_io_throttle's `id` (the PCI
    device `labdev<i>` itself has no BlockBackend; QEMU says so if asked by that id)."""
    return f"/machine/peripheral/{device_id(index)}/virtio-backend"


def node_id(index: int) -> str:
    """The block node a disk put back after a pull is attached to."""
    return f"labnode{index}"


def bridges(spec: LabSpec) -> list[str]:
    """`-device` values of the PCI bridges the disks sit behind."""
    count = (len(spec.disks) + SLOTS_PER_BRIDGE - 1) // SLOTS_PER_BRIDGE
    return [f"pci-bridge,id=labbr{b},chassis_nr={b + 1},shpc=off" for b in range(count)]


def device_props(spec: LabSpec, index: int, drive: str) -> dict[str, str]:
    """The virtio-blk device's properties, its backend being `drive` (a drive or node)."""
    disk = spec.disks[index]
    bridge, slot = divmod(index, SLOTS_PER_BRIDGE)
    props = {"driver": "virtio-blk-pci", "drive": drive, "id": device_id(index),
             "serial": disk.name, "bus": f"labbr{bridge}", "addr": f"{slot + 1:#x}"}
    for item in spec.disk_class(disk).qemu_device():
        key, value = item.split("=", 1)
        props[key] = value
    return props


def qemu_disk_options(spec: LabSpec, index: int, image: Path) -> list[str]:
    """`-drive` and `-device` for lab disk number `index` on `image` at boot."""
    cls = spec.disk_class(spec.disks[index])
    drive = ",".join([f"file={image}", "if=none", f"id={drive_id(index)}", "format=raw",
                      *cls.qemu_cache(), "aio=threads", *cls.qemu_throttling()])
    props = device_props(spec, index, drive_id(index))
    device = ",".join([props.pop("driver"), *(f"{k}={v}" for k, v in props.items())])
    return ["-drive", drive, "-device", device]


def blockdev_args(cls: DiskClass, index: int, image: Path) -> dict[str, Any]:
    """QMP blockdev-add arguments: the image again, cached as the class's -drive is."""
    cache = {"direct": True, "no-flush": cls.skips_flushes}
    return {"driver": "raw", "node-name": node_id(index), "cache": cache,
            "file": {"driver": "file", "filename": str(image), "aio": "threads",
                     "cache": cache}}
