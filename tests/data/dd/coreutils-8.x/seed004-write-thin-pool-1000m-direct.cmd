dd if=/dev/zero of=/dev/mapper/VG-thin_pool bs=1M count=1000 oflag=direct
# source: /work/shared/seeds/004_21904e9139666e8d.txt line 59 (blog post on LVM2 thin provisioning, CentOS 6.4, coreutils 8.x, exact version not stated)
# RECONSTRUCTED: the seed has the command and the output on one flattened line; the three stderr lines were split back at the record/summary boundaries (no other character changed)
