fio --name=flat --filename=/dev/disk/by-id/virtio-f1 --direct=1 --ioengine=libaio --rw=randread --bs=4k --iodepth=32 --runtime=60 --time_based --write_iops_log=flat --write_bw_log=flat --log_avg_msec=1000 --output-format=json --output=flat.json
# setup: in the lab VM (bench/burst.py, 2026-11-24), same boot as lab-burst-fresh; disk f1 of class {iops: 500}: throttling.iops-total=500
# exit code 0; logs renamed to lab-flat.fio_{iops,bw}.1.log
