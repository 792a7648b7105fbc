wipefs --no-act --json /dev/loopN
# setup: 128 MiB sparse image attached with losetup --direct-io=on -P, then: pvcreate /dev/loopN
