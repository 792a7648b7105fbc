pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -c 2 -t 5 -f /work/main/tests/data/pgbench/15/error-script.sql bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 2 (also in error-script-fails.exitcode); stdout and stderr kept separately; every transaction fails with an SQL error: clients abort
