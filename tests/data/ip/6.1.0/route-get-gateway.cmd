ip -j route get 198.51.100.7
# an address reached through the default gateway (eth0 192.0.2.2/24, gateway 192.0.2.1)
# exit code 0; iproute2 6.1.0 (Debian 12)
