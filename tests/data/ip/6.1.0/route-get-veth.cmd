ip -j route get 10.213.1.2
# this machine's end of a veth pair 10.213.1.1/30 (tests/hostlab.py); the namespace's end is 10.213.1.2
# exit code 0; iproute2 6.1.0 (Debian 12)
