fio --output-format=json+ --output=client-netns-1killed.json --client=ip:10.213.1.2,8772 client-netns-1killed.job-a.fio --client=ip:10.213.2.2,8772 client-netns-1killed.job-b.fio
# setup: Debian 12, kernel 6.18.44-fc-v769, 2 cores, fio 3.33; two network namespaces vbx1/vbx2 joined to the root namespace by veth pairs (10.213.1.1/30-10.213.1.2, 10.213.2.1/30-10.213.2.2)
# servers: ip netns exec vbx1 fio --server=ip:10.213.1.2,PORT and ip netns exec vbx2 fio --server=ip:10.213.2.2,PORT (background, own process groups); client in the root namespace
# job files: written by volbench.workloads.fioclient.job_text (one per host, own data file and log prefix fio-HOST), data files on ext4 under /var/tmp, laid out by this (first) run
# client logs come back as fio-HOST_{iops,bw}.1.log.ADDRESS and are stored here as <case>.<that name>
# 1.5 s into the 3 s run the fio server of host a (10.213.1.2) was SIGKILLed with its process group (os.killpg)
# exit code 1; stdout and stderr empty; the JSON file holds 'client: host=10.213.1.2 disconnected' before the JSON, and client_stats only for 10.213.2.2 (no "All clients" entry)
