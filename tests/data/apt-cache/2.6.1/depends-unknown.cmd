apt-cache depends no-such-package-volbench
# a package apt does not know (as when apt-get update never ran)
