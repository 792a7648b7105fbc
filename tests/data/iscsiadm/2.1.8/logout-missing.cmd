iscsiadm -m node -T iqn.2003-01.org.volbench:cap1 -p 127.0.0.1:3262 --logout
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
