"""Facts about this machine and its tools."""
