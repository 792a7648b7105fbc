pgbench -h /tmp/capture-pg-15/svc/postgres/sock -p 35335 -U postgres -c 2 -T 2 -r -b tpcb-like -b simple-update bench
# setup: throwaway PostgreSQL 15.18 (Debian 15.18-0+deb12u1) cluster (volbench's initdb options, unix socket only) from /usr/lib/postgresql/15/bin (data directory under /tmp/capture-pg-15), client and server on the same 2-core Debian 12 machine; pgbench 15.18
# exit code 0 (also in run-r-two-scripts.exitcode); stdout and stderr kept separately
# the database was initialised with pgbench -i -s 2 before (not captured)
