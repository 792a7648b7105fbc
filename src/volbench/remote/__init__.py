"""Other load hosts: SSH sessions and network namespaces."""
