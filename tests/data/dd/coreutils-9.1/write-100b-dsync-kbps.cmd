dd if=/dev/zero of=/tmp/capture-disk/mnt/work/tiny.dat bs=1 count=100 oflag=dsync
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; 100 one-byte synchronous writes: slow case, rate in kB/s, size below 1 kB so no '(x kB, y KiB)' part
