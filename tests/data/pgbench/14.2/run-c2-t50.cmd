pgbench -h /tmp/capture-pg-14/svc/postgres/sock -p 34255 -U postgres -c 2 -t 50 bench
# setup: throwaway PostgreSQL 14.2 (Ubuntu 14.2-1ubuntu1) cluster (volbench's initdb options, unix socket only) from /work/wt/oldpg/.cache/pg/14/root/usr/lib/postgresql/14/bin (data directory under /tmp/capture-pg-14), client and server on the same 2-core Debian 12 machine; pgbench 14.2
# exit code 0 (also in run-c2-t50.exitcode); stdout and stderr kept separately
