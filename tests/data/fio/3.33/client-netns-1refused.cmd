fio --output-format=json+ --output=client-netns-1refused.json --client=ip:10.213.1.2,8773 client-netns-1refused.job-a.fio --client=ip:10.213.2.2,8773 client-netns-1refused.job-b.fio
# setup: Debian 12, kernel 6.18.44-fc-v769, 2 cores, fio 3.33; two network namespaces vbx1/vbx2 joined to the root namespace by veth pairs (10.213.1.1/30-10.213.1.2, 10.213.2.1/30-10.213.2.2)
# servers: ip netns exec vbx1 fio --server=ip:10.213.1.2,PORT and ip netns exec vbx2 fio --server=ip:10.213.2.2,PORT (background, own process groups); client in the root namespace
# job files: written by volbench.workloads.fioclient.job_text (one per host, own data file and log prefix fio-HOST), data files on ext4 under /var/tmp, laid out by this (first) run
# client logs come back as fio-HOST_{iops,bw}.1.log.ADDRESS and are stored here as <case>.<that name>
# no server was started in vbx1: fio prints 'fio: connect: Connection refused' / 'fio: failed to connect to 10.213.1.2:8773' on stderr (and into the JSON file), runs host b alone and exits 0
# client_stats holds only 10.213.2.2
