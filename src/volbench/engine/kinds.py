"""Imports every module that registers an undo function, so cleanup knows them all."""

from pathlib import Path

from volbench.faults import md as md_faults  # "fault-md-member"
from volbench.faults import nfs as nfs_faults  # "fault-nfsd"
from volbench.faults import powercut  # "powercut-disk", "powercut-cycle"
from volbench.faults import throttle as throttle_faults  # "fault-throttle"
from volbench.remote import session as hosts_session
from volbench.services import postgres  # undo kind "postgres"
from volbench.system import containment, journal, sandbox  # "sandbox-user"
from volbench.system import daemons as stack_daemons
from volbench.system.block import cgroups, devices, mounts
from volbench.system.block import iscsiserver as iscsi_server
from volbench.system.block import lvmops as lvm_ops
from volbench.targets import iscsi as iscsi_target  # "iscsi-session"
from volbench.targets import mdraid as mdraid_target  # "md-array"
from volbench.targets import multihost  # targets built on load hosts
from volbench.targets import nfs as nfs_target  # "nfs-export", "nfs-mount", "nfsd-…"

__all__ = ["cgroups", "containment", "devices", "mounts", "postgres", "sandbox"]
__all__ += ["hosts_session", "multihost"]
__all__ += ["iscsi_server", "iscsi_target", "lvm_ops", "mdraid_target", "nfs_target"]
__all__ += ["stack_daemons"]
__all__ += ["md_faults", "nfs_faults", "powercut", "throttle_faults"]


def cleanup(directory: Path | None = None) -> tuple[list[str], list[str]]:
    """`journal.cleanup` with every undo kind registered: (removed, errors)."""
    return journal.cleanup(directory)
