# source: /work/shared/seeds/004_21904e9139666e8d.txt lines 59, 72, 96, 116, 159, 180, 211, 232, 251, 272, copied verbatim (leading space and the "# " prompt kept as in the seed)
# a blog post on LVM2 thin provisioning (CentOS 6.4 and Debian Wheezy era, coreutils 8.x: the exact coreutils version is not stated)
# the web page flattened each terminal block into one line: command, "N+M records in", "N+M records out" and the summary are separated by single spaces here
# shows the older coreutils 8.x summary format: "1048576000 bytes (1.0 GB) copied, 15.9126 s, 65.9 MB/s" (one decimal size, no ", x MiB" part)
