exportfs -v
# exportfs -o rw,sync,no_root_squash,no_subtree_check,fsid=5 127.0.0.1:/srv/e; exportfs -o ro,async,root_squash,no_subtree_check 10.0.0.0/8:/srv/e; exportfs -o rw,sync,no_root_squash,no_subtree_check,fsid=0 127.0.0.1:/srv/volbench/a-long-directory-name/volbench-nfs-export-1234 (a long path: the client goes on the next line)
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
