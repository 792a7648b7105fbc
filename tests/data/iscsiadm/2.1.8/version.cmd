iscsiadm --version
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
