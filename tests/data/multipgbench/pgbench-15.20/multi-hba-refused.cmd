python -m volbench.jobs.multipgbench SPEC.json  # exit code 0; its output file is <case>.multipgbench.json
# host a: pgbench -h 10.213.1.1 -p 57641 -U postgres -c 1 -j 1 -T 1 -P 1 -l --log-prefix=pgbench_txlog-1-a -b tpcb-like -n bench
# host b: pgbench -h 10.213.2.1 -p 57641 -U postgres -c 1 -j 1 -T 1 -P 1 -l --log-prefix=pgbench_txlog-2-b -b tpcb-like -n bench
# throwaway cluster listening on 10.213.1.1 and 10.213.2.1, pg_hba.conf admitting only 10.213.1.2/32 (services/postgres.py TcpAccess);
# host b connects from its own address, which pg_hba.conf does not list: FATAL no pg_hba.conf entry
# captured on this project's 2-core Debian 12 machine, pgbench/PostgreSQL 15.20, namespaces from tests/hostlab.py;
# per-transaction logs stored as <case>.<log file name>
