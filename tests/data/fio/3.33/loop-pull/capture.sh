#!/bin/sh
# How these files were made (2026-11-27, fio 3.33, host kernel 6.18, as root):
# a loopdisk of 512M capped at 500 read IOPS (cgroup blkio), fio 4k random reads QD16 for
# 13 s, the disk pulled at 4 s for 4 s (faults/loopdisk.py: capacity 0, then back).
#   volbench run exp.yaml --db p.db      (exp.yaml: tests/system/test_faults_host.py's
#                                         pulled-loop experiment; fio.cmd is its fio line)
# then every output of the run taken out of p.db (outputs, zlib) into this folder, and
# the run's fault events (annotations.faults) into events.json.
