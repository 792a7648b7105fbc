fio --name=sync --filename=/var/tmp/synccap/mnt/fio.dat --rw=randwrite --bs=4k --iodepth=1 --size=64M --direct=1 --runtime=3 --time_based=1 --ioengine=psync --group_reporting=1 --sync=1 --output-format=json+ --output=sync-osync-jsonplus.json
# setup: on xfs over a 512 MiB loop device (/dev/loop0 backed by a sparse file in /var/tmp on the host's ext4 root, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v782, 2 cores; fio-3.16
# exit code 0; console output (stdout+stderr) was: 
