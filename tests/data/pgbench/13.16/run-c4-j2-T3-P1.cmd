pgbench -h /tmp/capture-pg-13/svc/postgres/sock -p 49523 -U postgres -c 4 -j 2 -T 3 -P 1 bench
# setup: throwaway PostgreSQL 13.16 (Debian 13.16-0+deb11u1) cluster (volbench's initdb options, unix socket only) from /work/wt/oldpg/.cache/pg/13/root/usr/lib/postgresql/13/bin (data directory under /tmp/capture-pg-13), client and server on the same 2-core Debian 12 machine; pgbench 13.16
# exit code 0 (also in run-c4-j2-T3-P1.exitcode); stdout and stderr kept separately
