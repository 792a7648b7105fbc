fio --name=verify --filename=d.dat --size=16M --rw=read --bs=1M --verify=crc32c --verify_interval=4k --direct=1 --ioengine=libaio --iodepth=4 --output-format=json --output=error-verify-damaged.json
