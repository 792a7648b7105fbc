#!/bin/bash
# Real outage in fio's averaged logs: a loop disk capped at 500 IOPS (cgroup v1 blkio),
# then for 10 s capped at 512 B/s (one 4k read per 8 s), then back to 500 IOPS.
set -u
cd /tmp/timecap
truncate -s 256M disk.img
dd if=/dev/zero of=disk.img bs=1M count=256 conv=notrunc status=none
LOOP=$(losetup --direct-io=on -f --show disk.img) || exit 1
echo "$LOOP" > loopdev
MAJMIN=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
CG=/sys/fs/cgroup/blkio/volbench-timecap-$$
mkdir "$CG"
echo "$MAJMIN 500" > "$CG/blkio.throttle.read_iops_device"
sh -c "echo \$\$ > $CG/cgroup.procs; exec fio --name=gap --filename=$LOOP --direct=1 --ioengine=libaio --rw=randread --bs=4k --iodepth=1 --runtime=30 --time_based --write_iops_log=gap --write_bw_log=gap --log_avg_msec=1000 --output-format=json --output=gap.json" &
FIO=$!
sleep 10
echo "$MAJMIN 512" > "$CG/blkio.throttle.read_bps_device"
date +%s.%N > stall_on
sleep 10
echo "$MAJMIN 0" > "$CG/blkio.throttle.read_bps_device"
date +%s.%N > stall_off
wait $FIO; echo "fio exit $?" > fio_rc
losetup -d "$LOOP"
rmdir "$CG"
rm -f disk.img
