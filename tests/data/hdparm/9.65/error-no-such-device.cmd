hdparm -tT /dev/does-not-exist
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 2; a path that does not exist
