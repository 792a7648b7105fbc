"""Imports every module that registers an undo function, so cleanup knows them all."""

from volbench import cgroups, containment, devices, mounts, processes
from volbench import daemons as stack_daemons  # "daemon"
from volbench import iscsiserver as iscsi_server  # "iscsi-target"
from volbench import lvmops as lvm_ops  # "lvm-vg", "lvm-lv"
from volbench.hosts import session as hosts_session  # undo kind "remote-process"
from volbench.services import postgres  # undo kind "postgres"
from volbench.targets import iscsi as iscsi_target  # "iscsi-session"
from volbench.targets import mdraid as mdraid_target  # "md-array"
from volbench.targets import multihost  # undo kind "remote-tree"
from volbench.targets import nfs as nfs_target  # "nfs-export", "nfs-mount", "nfsd-…"

__all__ = ["cgroups", "containment", "devices", "mounts", "postgres", "processes"]
__all__ += ["hosts_session", "multihost"]
__all__ += ["iscsi_server", "iscsi_target", "lvm_ops", "mdraid_target", "nfs_target"]
__all__ += ["stack_daemons"]
