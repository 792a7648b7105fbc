fio /work/main/tests/data/fio/3.33/two-jobs-stonewall.fio --output-format=json --output=/work/main/tests/data/fio/3.33/two-jobs-stonewall.json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; console output (stdout+stderr) was: 
# job file: two-jobs-stonewall.fio (same directory; filename points at the xfs loop mount)
