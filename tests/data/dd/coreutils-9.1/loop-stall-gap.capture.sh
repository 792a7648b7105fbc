#!/bin/bash
# Real outage in dd's status=progress: a loop disk read by dd with iflag=direct in a cgroup v1
# blkio group capped at 10 MB/s; ~5 s in, capped at 1 B/s for 6 s (every read blocks), then 10 MB/s.
set -u
cd /tmp/timecap
truncate -s 200M dd.img
LOOP=$(losetup --direct-io=on -f --show dd.img) || exit 1
MAJMIN=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
CG=/sys/fs/cgroup/blkio/volbench-timecap-dd-$$
mkdir "$CG"
echo "$MAJMIN 10485760" > "$CG/blkio.throttle.read_bps_device"
sh -c "echo \$\$ > $CG/cgroup.procs; exec dd if=$LOOP of=/dev/null bs=64k count=2400 iflag=direct status=progress" 2> dd.stderr &
DD=$!
sleep 5
echo "$MAJMIN 1" > "$CG/blkio.throttle.read_bps_device"
sleep 6
echo "$MAJMIN 10485760" > "$CG/blkio.throttle.read_bps_device"
wait $DD; echo "dd exit $?" > dd_rc
losetup -d "$LOOP"
rmdir "$CG"
rm -f dd.img
