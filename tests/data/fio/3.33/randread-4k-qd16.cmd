fio --name=randread --filename=/tmp/capture-disk/mnt/work/fio.dat --size=128M --ioengine=libaio --direct=1 --runtime=2 --time_based=1 --rw=randread --bs=4k --iodepth=16 --output-format=json --output=/work/main/tests/data/fio/3.33/randread-4k-qd16.json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; console output (stdout+stderr) was: 
