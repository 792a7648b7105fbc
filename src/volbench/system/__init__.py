"""The operating system: processes, the journal, block devices, host facts."""
