ip netns exec vbt1 ip -j route get 10.213.1.1
# inside the namespace vbt1 after `ip addr flush` of its veth end: no route
# exit code 2; iproute2 6.1.0 (Debian 12)
