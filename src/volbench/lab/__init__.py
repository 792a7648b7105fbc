"""The lab: a VM with N throttled disks that runs the real kernel stacks (LVM, md, NFS, iSCSI).

Python API (docs/lab.md):

    from volbench.lab import LabSpec, LabDisk, run_in_vm
    spec = LabSpec(disks=(LabDisk("d1", 2 * 2**30, "standard"), LabDisk("d2", 2 * 2**30, "fast")))
    result = run_in_vm(spec, ["sh", "/path/checks.sh"], outdir, timeout=900)
    assert result.returncode == 0, result.console

`volbench lab run FILE` (lab/labrun.py) runs a whole experiment this way.
"""

from volbench.config.lab import DEFAULT_CLASSES, DEFAULT_MODULES, DiskClass, LabDisk, LabSpec
from volbench.lab.errors import KernelUnavailable, LabBootError, LabError, LabTimeout
from volbench.lab.kernel import Kernel, ensure_kernel
from volbench.lab.vm import LabResult, qemu_options, run_in_vm

__all__ = [
    "DEFAULT_CLASSES",
    "DEFAULT_MODULES",
    "DiskClass",
    "Kernel",
    "KernelUnavailable",
    "LabBootError",
    "LabDisk",
    "LabError",
    "LabResult",
    "LabSpec",
    "LabTimeout",
    "ensure_kernel",
    "qemu_options",
    "run_in_vm",
]
