"""Imports every module that registers an undo function, so cleanup knows them all."""

from volbench import cgroups, devices, mounts, processes
from volbench.hosts import session as hosts_session  # undo kind "remote-process"
from volbench.services import postgres  # undo kind "postgres"
from volbench.targets import multihost  # undo kind "remote-tree"

__all__ = ["cgroups", "devices", "mounts", "postgres", "processes"]
__all__ += ["hosts_session", "multihost"]
