pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -c 2 -j 1 -T 2 -f /work/main/tests/data/pgbench/15/custom-script.sql bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in run-custom-script.exitcode); stdout and stderr kept separately; custom script custom-script.sql (same directory)
