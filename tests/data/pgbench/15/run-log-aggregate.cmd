pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -c 2 -j 1 -T 3 -l --aggregate-interval=1 bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in run-log-aggregate.exitcode); stdout and stderr kept separately; -l --aggregate-interval=1: one line per second in pgbench_log.<pid>
# run-log-aggregate.aggregate-log: the complete pgbench_log.14248 (3 lines, untrimmed)
