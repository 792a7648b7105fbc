fio --name=err --directory=/tmp/capture-disk/mnt/work/does-not-exist --size=4M --rw=write --bs=4k --output-format=json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 1 (in error-missing-directory.exitcode); error-missing-directory.txt holds stdout and stderr together (2>&1)
