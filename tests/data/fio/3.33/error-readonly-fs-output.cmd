fio --name=err --directory=/tmp/capture-disk/ro --size=4M --rw=write --bs=4k --ioengine=libaio --direct=1 --output-format=json --output=/work/main/tests/data/fio/3.33/error-readonly-fs-output.json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 1; read-only tmpfs at /tmp/capture-disk/ro; console output (stdout+stderr) in error-readonly-fs-output.console.txt
