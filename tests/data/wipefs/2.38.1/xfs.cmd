wipefs --no-act --json /dev/loopN
# setup: 512 MiB sparse image attached with losetup --direct-io=on, then: mkfs.xfs -q /dev/loopN
