mdadm --detail /dev/md/vbc0
# mdadm --create /dev/md/vbc0 --run --level=raid0 --chunk=64 --raid-devices=2 --metadata=1.2 (two 1 GiB lab disks)
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
