# copied verbatim (byte count checked: 23585 characters) from a public repository; not run here
# source: GoogleCloudPlatform/PerfKitBenchmarker, path tests/data/fio/fio-parser-sample-result.json, commit 750e12958536c589475b61f2492029db6e783da2
# license of the source repository: BSD-3-Clause at the time (LICENSE at commit 4b317f3c...; newer PerfKitBenchmarker is Apache-2.0)
# command line not recorded in the source; 5 jobs (sequential_write, sequential_read, random_write_test, random_read_test, random_read_test_parallel) in groups 0-4 on /dev/sdb
# shows the fio 2.1.x JSON: no timestamp/global options, "slat"/"clat"/"lat" in microseconds (no _ns), integer iops, "io_bytes" actually in KiB, duplicate "0.00" keys in percentile, file ends with two newlines
