bonnie++ -d /tmp/capture-disk/mnt/bonnie -s 64M -r 32M -n 4 -f -u root -q
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; -f (fast): skips the per-char tests (empty fields)
