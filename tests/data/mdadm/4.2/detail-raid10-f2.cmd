mdadm --detail /dev/md/vbc10
# mdadm --create /dev/md/vbc10 --run --level=raid10 --layout=f2 --raid-devices=2 --metadata=1.2 --assume-clean
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
