fio --name=randrw --filename=/var/tmp/cap/f.dat --size=64M --rw=randrw --rwmixread=70 --bs=4k --runtime=3 --time_based=1 --write_iops_log=fio --write_bw_log=fio --log_avg_msec=1000 --numjobs=2 --group_reporting=1 --output-format=json+ --output=out.json
# buffered I/O on a file in /var/tmp (ext4 root); log files renamed with the case prefix: fio_iops.N.log -> logs-randrw-nj2.fio_iops.N.log; exit 0
