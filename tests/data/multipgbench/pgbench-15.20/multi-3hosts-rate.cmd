python -m volbench.jobs.multipgbench SPEC.json  # exit code 0; its output file is <case>.multipgbench.json
# host a: pgbench -h 10.213.1.1 -p 60787 -U postgres -c 2 -j 1 -T 2 -P 1 -l --log-prefix=pgbench_txlog-1-a -b tpcb-like -n -R 150 bench_s1
# host b: pgbench -h 10.213.2.1 -p 60787 -U postgres -c 2 -j 1 -T 2 -P 1 -l --log-prefix=pgbench_txlog-2-b -b tpcb-like -n -R 150 bench_s1
# host c: pgbench -h 10.213.3.1 -p 60787 -U postgres -c 2 -j 1 -T 2 -P 1 -l --log-prefix=pgbench_txlog-3-c -b tpcb-like -n -R 150 bench_s1
# volbench experiment: loopdisk 1G xfs target, pgbench scale 1, clients 2 per host, duration 2s, options [-R, 150], clients_from [a, b, c] (3 namespaces over veth pairs)
# captured on this project's 2-core Debian 12 machine, pgbench/PostgreSQL 15.20, namespaces from tests/hostlab.py;
# per-transaction logs stored as <case>.<log file name>
