pgbench -i -s 1000 pgbench
# source: /work/shared/seeds/002_0f7064baa6478e75.txt (blog post, Japanese, NIFTY Cloud "高速ディスクはどれぐらい速いのか?": CentOS 6.6, PostgreSQL 9.4 from PGDG, ext4, 8 vCPU / 32 GB) lines 190, copied verbatim
# only the line the blog author kept (the last progress line of data generation); the other init output was not shown in the post
