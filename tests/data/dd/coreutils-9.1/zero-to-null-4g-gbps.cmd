dd if=/dev/zero of=/dev/null bs=1M count=4096
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; memory only (/dev/zero to /dev/null): fastest case, rate in GB/s
