bonnie++ -d /tmp/capture-disk/mnt/bonnie -s 256M -r 128M -n 4 -u root -q
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; -q: CSV line on stdout, nothing else
