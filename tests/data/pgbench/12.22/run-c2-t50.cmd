pgbench -h /tmp/capture-pg-12/svc/postgres/sock -p 37511 -U postgres -c 2 -t 50 bench
# setup: throwaway PostgreSQL 12.22 (Ubuntu 12.22-0ubuntu0.20.04.4) cluster (volbench's initdb options, unix socket only) from /work/wt/oldpg/.cache/pg/12/root/usr/lib/postgresql/12/bin (data directory under /tmp/capture-pg-12), client and server on the same 2-core Debian 12 machine; pgbench 12.22
# exit code 0 (also in run-c2-t50.exitcode); stdout and stderr kept separately
