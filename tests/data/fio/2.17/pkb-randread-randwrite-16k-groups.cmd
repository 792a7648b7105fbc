# copied verbatim (byte count checked: 11548 characters) from a public repository; not run here
# source: GoogleCloudPlatform/PerfKitBenchmarker, path tests/data/fio/hist/pkb-7fb0c9d8-0_fio.json, commit 863afbfe2a137f0f9bb4579b23c47a850df93d61
# license of the source repository: BSD-3-Clause / Apache-2.0 (PerfKitBenchmarker)
# job file in the same source folder: tests/data/fio/hist/pkb-7fb0c9d8-0_fio.job (not copied); run by PerfKitBenchmarker on a GCE persistent disk, group_reporting, numjobs=2, write_hist_log
# shows fio 2.17 JSON: "slat"/"clat"/"lat" in microseconds, "io_bytes" in KiB, fractional iops, duplicate "filename" key in "global options", duplicate "0.00" keys, extra 25/75 percentiles, bw_min/bw_max 0 with group_reporting, no disk_util
