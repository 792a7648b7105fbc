pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -c 2 -j 1 -T 2 -b select-only@9 -b tpcb-like@1 bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in run-builtin-weights.exitcode); stdout and stderr kept separately; two weighted builtin scripts: per-script sections in the report
