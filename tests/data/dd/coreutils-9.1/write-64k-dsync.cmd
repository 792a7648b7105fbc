dd if=/dev/zero of=/tmp/capture-disk/mnt/work/small.dat bs=4k count=16 oflag=dsync
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; 16 synchronous 4 KiB writes
