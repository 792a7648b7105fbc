#!/bin/bash
# The verify pass of a faulted run (workloads/fioverify.py), captured on fio 3.33:
# the data file written with crc32c headers every 4 KiB (layout), random 4k writes that
# carry headers (the measured job's extra options), a read-back verify that passes,
# then the same verify after two 4 KiB blocks were damaged (one overwritten with 0xff
# in the middle, one zeroed: a bad checksum and a bad magic header), with and without
# continue_on_error.
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
W=/tmp/f2cap
mkdir -p "$W" && cd "$W" && rm -f d.dat
run() {  # name, fio args...
  local name=$1; shift
  echo "fio $* --output-format=json --output=$name.json" > "$OUT/$name.cmd"
  fio "$@" --output-format=json --output="$OUT/$name.json" > "$OUT/$name.stderr" 2>&1
  echo $? > "$OUT/$name.exitcode"
}
run verify-layout --name=layout --filename=d.dat --size=16M --rw=write --bs=1M \
  --direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c --do_verify=0 --verify_interval=4k
run verify-randwrite --name=w --filename=d.dat --size=16M --rw=randwrite --bs=4k \
  --iodepth=8 --direct=1 --ioengine=libaio --runtime=2 --time_based=1 \
  --verify=crc32c --do_verify=0
VERIFY=(--name=verify --filename=d.dat --size=16M --rw=read --bs=1M --verify=crc32c
        --verify_interval=4k --direct=1 --ioengine=libaio --iodepth=4
        --continue_on_error=verify)
run verify-ok "${VERIFY[@]}"
python3 - <<'PY'
with open("d.dat", "r+b") as f:
    f.seek(5 * 1048576 + 12345); f.write(b"\xff" * 100)
    f.seek(9 * 1048576); f.write(b"\0" * 4096)
PY
run verify-damaged "${VERIFY[@]}"
# Without continue_on_error the job stops at the first bad block (no total_err in the JSON).
run error-verify-damaged "${VERIFY[@]:0:10}"
rm -f d.dat
