tgtadm -C 21 --lld iscsi --op show --mode target
# tgtd -f -C 21 --iscsi portal=127.0.0.1:3262; two targets (tid 1, 2), LUN 1 on a lab disk each, bound to initiator 127.0.0.1
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
