apt-cache depends linux-image-amd64
# Debian 12 with bookworm(-security/-updates) lists, after apt-get update (2026-11-22)
