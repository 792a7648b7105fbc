"""Block devices, filesystems, mounts, cgroups and the storage stacks' tools."""
