bonnie++ (version 1.03c, as its table header says) with 500M files in a KVM guest (IDE disk, then virtio disk) and 11760M on the host
# copied: the three CSV lines bonnie++ printed under its tables, verbatim, from a public forum thread "Disk Performance with KVM: IDE vs. VIRTIO" (Virtualisation forum, first post by hiasl, 2009-09-09; Ubuntu 9.04 guest and host), as stored in this project's public reference corpus (no address recorded there). Not run here.
# 1.0x CSV: no format-version field, no latency fields, 27 fields; +++++ = too fast to measure
