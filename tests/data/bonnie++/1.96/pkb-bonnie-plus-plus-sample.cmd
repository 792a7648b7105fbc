# copied verbatim (220 characters) from a public repository; not run here
# source: GoogleCloudPlatform/PerfKitBenchmarker, path tests/data/bonnie-plus-plus-sample.txt, commit 848e96c1d6461309ea5fe8d99681dccc6172527d
# license of the source repository: BSD-3-Clause / Apache-2.0 (PerfKitBenchmarker)
# one CSV line of bonnie++ 1.96 (format_version 1.96 = bonnie_version 1.96), machine perfkit-7b22f510-0, file size 7423M, 100 (x1024) files; command line not recorded
# shows: per-char columns empty (run with -f), +++++/+++ in the seq_stat and ran_stat columns, latencies with mixed units (512ms, 44660us)
