lvs --reportformat json --units b --nosuffix -a -o lv_name,vg_name,lv_size,lv_attr,segtype,stripes,stripe_size,pool_lv,origin,data_percent,metadata_percent,chunk_size,lv_dm_path,lv_active,devices vbcap
# VG vbcap on 3 lab disks (1 GiB each): span (linear 1200M over vda,vdb: one LV row per segment), str (-i 2 -I 64k over vdb,vdc), pool (thin-pool 300M), thin (-V 200M, 20 MiB written), snap (thin snapshot of thin, -kn)
# captured in the volbench lab VM (virtme-ng, Debian kernel 6.1.0-56-amd64, 1 GiB virtio lab disks c1..c4 = /dev/vda..vdd, LC_ALL unset)
