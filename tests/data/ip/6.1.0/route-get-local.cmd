ip -j route get 127.0.0.1
# loopback
# exit code 0; iproute2 6.1.0 (Debian 12)
