ip netns exec vbt1 ip -j route get 10.213.1.1
# inside the namespace vbt1, towards this machine's end 10.213.1.1
# exit code 0; iproute2 6.1.0 (Debian 12)
