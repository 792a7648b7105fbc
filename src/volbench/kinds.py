"""Imports every module that registers an undo function, so cleanup knows them all."""

from volbench import cgroups, devices, mounts, processes

__all__ = ["cgroups", "devices", "mounts", "processes"]
