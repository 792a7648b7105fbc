pgbench -c 20 -T 300 pgbench
# source: /work/shared/seeds/002_0f7064baa6478e75.txt (blog post, Japanese, NIFTY Cloud "高速ディスクはどれぐらい速いのか?": CentOS 6.6, PostgreSQL 9.4 from PGDG, ext4, 8 vCPU / 32 GB) lines 122-132, copied verbatim
# standard disk, scale 20; terminal capture (stdout and stderr interleaved; 9.4 prints no 'pgbench (version)' header line); the '$ pgbench ...' prompt line left out
