bonnie++ -d /tmp/capture-disk/mnt/bonnie -s 256M -r 128M -n 16 -D -b -m volbench -u root -q
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 1; -D (O_DIRECT) together with the per-char tests fails at once with "Can't write() - disk full?" on stdout, no CSV
