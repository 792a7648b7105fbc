dd if=/dev/zero of=/tmp/capture-disk/mnt/work/fill.dat bs=1M count=2048 oflag=direct
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 1; writes 2 GiB into the 1 GiB xfs: stops with 'No space left on device' and still prints the summary
