# copied verbatim (byte count checked: 7171 characters) from a public repository; not run here
# source: louwrentius/fio-plot, path HPDL380G8-H420i-Crucial-MX200/randread-1-1.json, commit 8cf36d05a58ac0be23c4848b8ecbba5de4cf2020
# license of the source repository: not stored in the index (fio-plot is published as BSD-3-Clause as far as known: check before shipping)
# options as recorded in "job options": rw=randread bs=4k ioengine=libaio iodepth=1 direct=1 runtime=60 numjobs=1 group_reporting filename=/dev/sdb, on an HP DL380 G8 with a Crucial MX200 SSD
# shows fio 3.1 JSON: *_ns latencies and io_kbytes already present, but no bw_bytes, no "N" counts, no iodepth_submit/complete, and still the duplicate "0.00" percentile keys
