# copied verbatim (character counts checked: stdout 1121, stderr 390) from a public repository; not run here
# stdout source: GoogleCloudPlatform/PerfKitBenchmarker, path tests/data/pgbench.stdout.txt, commit 9bcd5cd3c5be77ed05bebbef2a6fc8b677132fb0
# stderr source: GoogleCloudPlatform/PerfKitBenchmarker, path tests/data/pgbench.stderr.txt, commit 8758d4b289be34eb39b85fa540af3cbb5056c019 (a different commit: the two files are PKB's paired fixtures, 5 progress lines match "duration: 5 s")
# license of the source repository: BSD-3-Clause / Apache-2.0 (PerfKitBenchmarker)
# command line not recorded; from the output: 16 clients, 16 threads, -T 5, -r (statement latencies), -P 1 (progress), run over ssh (the first stderr line is an ssh warning, not pgbench)
# version NOT recorded in the source: placed under 9.4 because the format is pre-9.5 ("transaction type: TPC-B (sort of)" without <builtin: >, "latency average:" with a colon, \setrandom lines, tab-separated statement latencies); treat as "9.4-style"
