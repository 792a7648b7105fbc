"""/proc/diskstats as counters around a run (system/block/diskstats.py), flushes included."""

from __future__ import annotations

from volbench.system.block import diskstats

# Lines of this machine's /proc/diskstats (kernel 6.18: 17 fields after the name) and of a
# kernel before 5.5 (11 fields: no discard or flush counters).
NOW = "   7       0 loop0 1379578 12 25309697 182657 438548 10857 19487291 167685 0 126284 " \
      "396206 82 0 44830760 16 117552 45847"
OLD = "   8       0 sda 4926 1396 261318 3012 1123 2014 25648 4156 0 3168 7165"


def test_flushes_are_the_sixteenth_field_where_the_kernel_counts_them() -> None:
    found = diskstats.parse(f"{NOW}\n{OLD}\n")
    assert found["loop0"] == diskstats.Counters(1379578, 25309697 * 512, 438548,
                                                19487291 * 512, 117552)
    assert found["sda"].flushes == 0 and found["sda"].write_ios == 1123
    delta = found["loop0"] - diskstats.Counters(flushes=117500)
    assert delta.as_dict()["flushes"] == 52
