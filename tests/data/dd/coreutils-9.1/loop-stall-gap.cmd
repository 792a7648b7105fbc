dd if=/dev/loop5 of=/dev/null bs=64k count=2400 iflag=direct status=progress
# setup: this machine (Debian 12, kernel 6.18, coreutils 9.1), 2026-11-25, loop-stall-gap.capture.sh: a 200 MiB loop disk (direct I/O) read by dd in a cgroup v1 blkio group capped at read_bps_device 10 MiB/s; ~5 s in, capped at 1 B/s for 6 s (every read blocks), then 10 MiB/s again
# exit code 0; stderr only (status=progress): no progress line from 4 s to 11 s
