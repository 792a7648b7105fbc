fio --name=err --directory=/tmp/capture-disk/ro --size=4M --rw=write --bs=4k --ioengine=libaio --direct=1 --output-format=json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 1 (in error-readonly-fs.exitcode); error-readonly-fs.txt holds stdout and stderr together (2>&1)
# /tmp/capture-disk/ro is a tmpfs mounted read-only (mount -t tmpfs -o ro,size=1M tmpfs /tmp/capture-disk/ro); fio cannot create its file
