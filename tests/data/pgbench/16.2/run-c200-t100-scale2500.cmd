pgbench -c 200 -t 100 TESTDB
# source: /work/shared/seeds/000_a39277e918c3dc4b.txt lines 75-88 (blog post, Japanese, "DISK 管理の性能差を検証してみよう": RHEL 9.4, PostgreSQL 16.2 from PGDG, xfs on a 50 GB cloud disk, database initialised with pgbench -i -s 2500), copied verbatim
# terminal capture: stdout and stderr interleaved as shown on the terminal ("starting vacuum...end." is stderr, the rest stdout); the prompt lines "# pgbench ..." and "#" were left out
