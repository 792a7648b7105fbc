pgbench -h /tmp/capture-pg-16/svc/postgres/sock -p 34033 -U postgres -c 2 -t 50 bench
# setup: throwaway PostgreSQL 16.2 cluster (volbench's initdb options, unix socket only) from /work/wt/port/.cache/pg/16/pgserver/pginstall/bin (data directory under /tmp/capture-pg-16), client and server on the same 2-core Debian 12 machine; pgbench 16.2
# exit code 0 (also in run-c2-t50.exitcode); stdout and stderr kept separately
