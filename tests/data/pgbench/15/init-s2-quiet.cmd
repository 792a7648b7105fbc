pgbench -h /tmp/capture-pg/sock -p 5499 -U postgres -i -s 2 -q bench
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in init-s2-quiet.exitcode); stdout and stderr kept separately; -q: progress only every 5 s (none for such a small scale)
