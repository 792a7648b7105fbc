dd if=/tmp/capture-disk/mnt/work/dd.dat of=/dev/null bs=512 count=400000 iflag=direct status=progress
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; status=progress writes carriage-return separated progress updates to stderr before the summary
# note: took 31 s (400000 O_DIRECT 512-byte reads at ~13k IOPS), longer than the other cases, to get ~30 progress updates
