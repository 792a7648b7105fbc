#!/bin/bash
# Real fio outputs with a sync after every write (fsync=1, fdatasync=1), O_DSYNC / O_SYNC
# writes and a sync every 4 writes over two jobs, for the parsers of fio's `sync` section.
#   sudo tests/data/fio/sync.capture.sh FIO OUTDIR [--client]
# FIO: the fio binary (fio 3.33 from Debian 12; fio 3.16 built from its source tag (libaio-dev installed) with
# ./configure --disable-native, make); OUTDIR: tests/data/fio/<version>. --client also
# captures a client/server run (a server on 127.0.0.1:8797, started and stopped here).
# Each run: 4k random writes at QD1 for 3 s on xfs over a 512 MiB loop device
# (losetup --direct-io=on, backed by a file on the host's ext4 root), the options volbench
# itself passes for a sync mode (psync, direct=1, time_based, group_reporting) plus the
# sync option; one run with libaio, whose sync latencies fio does not time (fio 3.16: the
# clock starts after the call returns; 3.31 on: at the write before it).
set -eu
FIO=$1
OUT=$(realpath "$2")
CLIENT=${3:-}
WORK=$(mktemp -d /var/tmp/synccap.XXXXXX)
cd "$WORK"
truncate -s 512M disk.img
LOOP=$(losetup --direct-io=on -f --show disk.img)
cleanup() {
    [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true
    umount "$WORK/mnt" 2>/dev/null || true
    losetup -d "$LOOP"
    rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${SYNCCAP_DEBUG:-}" ] && set -x
mkfs.xfs -q "$LOOP"
mkdir mnt
mount "$LOOP" mnt
VERSION=$("$FIO" --version)
SETUP="# setup: on xfs over a 512 MiB loop device ($LOOP backed by a sparse file in /var/tmp on the host's ext4 root, losetup --direct-io=on), Debian 12, kernel $(uname -r), 2 cores; $VERSION"
COMMON=(--filename="$WORK/mnt/fio.dat" --rw=randwrite --bs=4k --iodepth=1 --size=64M
        --direct=1 --runtime=3 --time_based=1)

run() {  # NAME FORMAT [options…]: one capture, with its .cmd and .exitcode
    local name=$1 format=$2
    shift 2
    local argv=("$FIO" --name=sync "${COMMON[@]}" --ioengine="${ENGINE:-psync}" "$@"
                --output-format="$format" --output="$OUT/$name.json")
    set +e
    "${argv[@]}" > console.txt 2>&1
    local rc=$?
    set -e
    echo "$rc" > "$OUT/$name.exitcode"
    { echo "${argv[*]}" | sed "s#$WORK#/var/tmp/synccap#g; s#^$FIO#fio#"
      echo "$SETUP"
      echo "# exit code $rc; console output (stdout+stderr) was: $(cat console.txt)"; } \
        > "$OUT/$name.cmd"
}

run sync-fsync1-jsonplus json+ --group_reporting=1 --fsync=1
run sync-fdatasync1 json --group_reporting=1 --fdatasync=1
run sync-fdatasync4-nj2-jsonplus json+ --numjobs=2 --fdatasync=4
ENGINE=libaio run sync-fdatasync1-libaio-jsonplus json+ --group_reporting=1 --fdatasync=1
if "$FIO" --cmdhelp=sync | grep -q dsync; then
    run sync-dsync-jsonplus json+ --group_reporting=1 --sync=dsync
else  # before fio 3.24 `sync` was a boolean: 1 is O_SYNC
    run sync-osync-jsonplus json+ --group_reporting=1 --sync=1
fi
# With the per-second logs a live volbench run writes (workloads/fiologs.py LOG_OPTIONS).
run sync-fdatasync1-jsonplus json+ --group_reporting=1 --fdatasync=1 \
    --write_iops_log=fio --write_bw_log=fio --write_lat_log=fio --write_hist_log=fio \
    --log_avg_msec=1000 --log_hist_msec=1000
for kind in iops bw lat clat_hist; do
    mv "fio_$kind.1.log" "$OUT/sync-fdatasync1-jsonplus.fio_$kind.1.log"
done
rm -f fio_clat.1.log fio_slat.1.log

if [ "$CLIENT" = "--client" ]; then
    "$FIO" --server=ip:127.0.0.1,8797 > server.txt 2>&1 &
    SERVER=$!
    sleep 1
    cat > client.fio <<EOF
[sync]
filename=$WORK/mnt/fio.dat
rw=randwrite
bs=4k
iodepth=1
size=64M
ioengine=psync
direct=1
runtime=3
time_based=1
group_reporting=1
fdatasync=1
EOF
    sed "s#$WORK#/var/tmp/synccap#g" client.fio > "$OUT/client-sync-fdatasync1.job.fio"
    set +e
    "$FIO" --client=ip:127.0.0.1,8797 client.fio --output-format=json+ \
        --output="$OUT/client-sync-fdatasync1-jsonplus.json" > console.txt 2>&1
    rc=$?
    set -e
    echo "$rc" > "$OUT/client-sync-fdatasync1-jsonplus.exitcode"
    { echo "fio --client=ip:127.0.0.1,8797 client-sync-fdatasync1.job.fio --output-format=json+ --output=client-sync-fdatasync1-jsonplus.json"
      echo "$SETUP"
      echo "# server: fio --server=ip:127.0.0.1,8797 (background, stopped after the run)"
      echo "# exit code $rc; console output (stdout+stderr) was: $(cat console.txt)"; } \
        > "$OUT/client-sync-fdatasync1-jsonplus.cmd"
fi
