pgbench --version
# setup: throwaway PostgreSQL 15.20 cluster (initdb defaults, unix socket only) (data directory under /tmp/capture-pg on the VM's virtio root disk), client and server on the same 2-core Debian 12 VM; pgbench 15.20
# exit code 0 (also in version.exitcode); stdout and stderr kept separately
