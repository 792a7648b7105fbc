fio --client=ip:127.0.0.1,8799 /work/main/tests/data/fio/3.33/client-randread.fio --client=ip:127.0.0.1,8800 /work/main/tests/data/fio/3.33/client-randread.fio --output-format=json+ --output=/work/main/tests/data/fio/3.33/client-2servers-jsonplus.json
# setup: on xfs over a 1 GiB loop device (/dev/loop0 backed by a sparse file in /tmp, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v769, 2 cores
# exit code 0; console output (stdout+stderr) was: 
# servers: fio --server=ip:127.0.0.1,8799 and fio --server=ip:127.0.0.1,8800 (background); job file client-randread.fio
