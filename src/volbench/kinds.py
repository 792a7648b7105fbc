"""Imports every module that registers an undo function, so cleanup knows them all."""

from pathlib import Path

from volbench import cgroups, containment, devices, journal, mounts
from volbench import daemons as stack_daemons  # "daemon"
from volbench import iscsiserver as iscsi_server  # "iscsi-target"
from volbench import lvmops as lvm_ops  # "lvm-vg", "lvm-lv"
from volbench.hosts import session as hosts_session  # undo kind "remote-process"
from volbench.services import postgres  # undo kind "postgres"
from volbench.targets import iscsi as iscsi_target  # "iscsi-session"
from volbench.targets import mdraid as mdraid_target  # "md-array"
from volbench.targets import multihost  # targets built on load hosts
from volbench.targets import nfs as nfs_target  # "nfs-export", "nfs-mount", "nfsd-…"

__all__ = ["cgroups", "containment", "devices", "mounts", "postgres"]
__all__ += ["hosts_session", "multihost"]
__all__ += ["iscsi_server", "iscsi_target", "lvm_ops", "mdraid_target", "nfs_target"]
__all__ += ["stack_daemons"]


def cleanup(directory: Path | None = None) -> tuple[list[str], list[str]]:
    """`journal.cleanup` with every undo kind registered: (removed, errors)."""
    return journal.cleanup(directory)
