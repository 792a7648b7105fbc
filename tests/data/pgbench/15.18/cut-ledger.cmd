pgbench -h /tmp/capture-pg-cut/postgres/sock -p 58815 -U postgres -n -c 2 -j 1 -T 20 -P 1 -f ledger.sql -D vbn=0 -D vbcycle=4242 -l --log-prefix=/tmp/capture-pg-cut/txlog postgres
# server SIGKILLed ~3 s in; restarted: 2.95 s
