bonnie++ -d /tmp/capture-disk/mnt/bonnie -s 0 -n 2 -x 2 -u root -q
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; -s 0 skips the block IO tests (empty fields), -x 2 repeats the run: two CSV lines
