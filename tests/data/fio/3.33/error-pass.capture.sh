#!/bin/bash
# Why a faulted write run can end early (docs/faults.md): fio 3.33 ends a time_based job
# whose pass over the file had no successful write, when verify is set (do_io() returns
# after each `size` bytes issued and stops the job if none of them completed: "stop job
# if we failed doing any IO"). Every write fails here: a sparse file on a full tmpfs
# (ENOSPC), random 4k writes QD4 for 5 s with continue_on_error, once with the verify
# headers a faulted run writes (ends after one pass: 1024 errors, ~0.1 s), once with
# them and without a random map (volbench's measured options since: runs its 5 s) and
# once without verify (runs its 5 s). Needs root (mount).
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/errpass.XXXXXX)
mount -t tmpfs -o size=64k errpass "$W" || exit 1
dd if=/dev/zero of="$W/fill" bs=4k count=100 2>/dev/null  # the tmpfs is full
truncate -s 4M "$W/data"                                  # sparse: every write allocates
run() {  # name, fio args...
  local name=$1; shift
  echo "fio $* --output-format=json --output=$name.json" > "$OUT/$name.cmd"
  (cd "$W" && fio "$@" --output-format=json --output="$OUT/$name.json" \
     > "$OUT/$name.stderr" 2>&1; echo $? > "$OUT/$name.exitcode")
}
JOB=(--name=w --filename="$W/data" --rw=randwrite --bs=4k --size=4M --time_based=1
     --runtime=5 --ioengine=libaio --direct=1 --iodepth=4 --continue_on_error=all
     --ignore_error=EIO,EIO:ENOSPC)
run error-pass-verify "${JOB[@]}" --verify=crc32c --do_verify=0
run error-pass-onepass "${JOB[@]}" --verify=crc32c --do_verify=0 --verify_state_save=0 \
  --norandommap --io_size=1P
run error-pass-noverify "${JOB[@]}"
umount "$W" && rmdir "$W"
