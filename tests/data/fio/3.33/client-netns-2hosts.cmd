fio --output-format=json+ --output=client-netns-2hosts.json --client=ip:10.213.1.2,8771 client-netns-2hosts.job-a.fio --client=ip:10.213.2.2,8771 client-netns-2hosts.job-b.fio
# setup: Debian 12, kernel 6.18.44-fc-v769, 2 cores, fio 3.33; two network namespaces vbx1/vbx2 joined to the root namespace by veth pairs (10.213.1.1/30-10.213.1.2, 10.213.2.1/30-10.213.2.2)
# servers: ip netns exec vbx1 fio --server=ip:10.213.1.2,PORT and ip netns exec vbx2 fio --server=ip:10.213.2.2,PORT (background, own process groups); client in the root namespace
# job files: written by volbench.workloads.fioclient.job_text (one per host, own data file and log prefix fio-HOST), data files on ext4 under /var/tmp, laid out by this (first) run
# client logs come back as fio-HOST_{iops,bw}.1.log.ADDRESS and are stored here as <case>.<that name>
# exit code 0; stdout and stderr empty; the JSON file starts with the servers' <vm> text lines (job start, layout), then one client_stats entry per host and "All clients"
