pgbench -h /tmp/capture-pg-15/svc/postgres/sock -p 43047 -U postgres -i -s 2 -I gp bench
# setup: throwaway PostgreSQL 15.18 (Debian 15.18-0+deb12u1) cluster (volbench's initdb options, unix socket only) from /usr/lib/postgresql/15/bin (data directory under /tmp/capture-pg-15), client and server on the same 2-core Debian 12 machine; pgbench 15.18
# exit code 1 (also in error-init-primary-keys-exist.exitcode); stdout and stderr kept separately
# the database was initialised with pgbench -i -s 2 before (not captured)
# how it fails: generating the data again works (rows and times are printed), then adding primary keys the tables already have fails: an honest failed init whose output still carries init figures
