dd if=/tmp/capture-disk/mnt/work/partial.dat of=/dev/null bs=1M count=2
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; input file is 1.5 MiB (1572864 bytes, made with head -c 1572864 /dev/zero), so the last record is partial: '1+1 records in'
