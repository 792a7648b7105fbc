"""Imports every module that registers an undo function, so cleanup knows them all."""

from volbench import cgroups, devices, mounts, processes
from volbench.services import postgres  # undo kind "postgres"

__all__ = ["cgroups", "devices", "mounts", "postgres", "processes"]
