fio --client=ip:127.0.0.1,8797 client-sync-fdatasync1.job.fio --output-format=json+ --output=client-sync-fdatasync1-jsonplus.json
# setup: on xfs over a 512 MiB loop device (/dev/loop0 backed by a sparse file in /var/tmp on the host's ext4 root, losetup --direct-io=on), Debian 12, kernel 6.18.44-fc-v782, 2 cores; fio-3.33
# server: fio --server=ip:127.0.0.1,8797 (background, stopped after the run)
# exit code 0; console output (stdout+stderr) was: 
