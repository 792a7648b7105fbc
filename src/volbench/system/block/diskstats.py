"""Device I/O counters around a run: did the disk do the work, or the page cache?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size


@dataclass(frozen=True)
class Counters:
    read_ios: int = 0
    read_bytes: int = 0
    write_ios: int = 0
    write_bytes: int = 0
    # Cache flushes the device completed (kernels from 5.5 on): what each fsync costs a
    # write-back disk, once per disk of a linear LV (docs/lab.md, "What a flush costs").
    flushes: int = 0

    def __sub__(self, other: Counters) -> Counters:
        return Counters(self.read_ios - other.read_ios, self.read_bytes - other.read_bytes,
                        self.write_ios - other.write_ios, self.write_bytes - other.write_bytes,
                        self.flushes - other.flushes)

    def __add__(self, other: Counters) -> Counters:
        return Counters(self.read_ios + other.read_ios, self.read_bytes + other.read_bytes,
                        self.write_ios + other.write_ios, self.write_bytes + other.write_bytes,
                        self.flushes + other.flushes)

    def as_dict(self) -> dict[str, int]:
        return {"read_ios": self.read_ios, "read_bytes": self.read_bytes,
                "write_ios": self.write_ios, "write_bytes": self.write_bytes,
                "flushes": self.flushes}


def parse(text: str) -> dict[str, Counters]:
    """/proc/diskstats: by device name (see the kernel's iostats documentation)."""
    found: dict[str, Counters] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 10:
            continue
        # major minor name, then the kernel's fields 1-17 (iostats.rst): reads merged
        # sectors ms, writes merged sectors ms, in-flight io-ms weighted-ms, discards (4
        # fields), flushes completed (field 16) and their ms (from 5.5 on)
        flushes = int(fields[18]) if len(fields) >= 20 else 0
        found[fields[2]] = Counters(int(fields[3]), int(fields[5]) * SECTOR,
                                    int(fields[7]), int(fields[9]) * SECTOR, flushes)
    return found


def read(devices: list[str], path: Path = Path("/proc/diskstats")) -> Counters:
    """Summed counters of `devices` (/dev/… paths or names)."""
    stats = parse(path.read_text())
    total = Counters()
    for device in devices:
        name = Path(device).resolve().name
        total = total + stats.get(name, Counters())
    return total
