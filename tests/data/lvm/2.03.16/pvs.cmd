pvs --reportformat json --units b --nosuffix -o pv_name,vg_name,pv_size,pv_free,dev_size -S vg_name=vbcap
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
