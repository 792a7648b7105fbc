pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -c 2 -j 2 -T 2 -l bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in run-log-l.exitcode); stdout and stderr kept separately; -l: per-transaction log files pgbench_log.<pid> and pgbench_log.<pid>.1 (one per thread) in the working directory
# run-log-l.thread0.log: first 200 of 2527 lines of pgbench_log.14231 (trimmed with head -n 200)
# run-log-l.thread1.log: first 200 of 2603 lines of pgbench_log.14231.1 (trimmed with head -n 200)
