bonnie++ -d /tmp/capture-disk/mnt/bonnie -s 256M -r 128M -n 16 -D -f -b -m volbench -u root -q
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; -D O_DIRECT block IO, -f skips per-char tests (they fail with -D), -b fsync after every write: block and create columns show real numbers instead of +++++; -m sets the name field
