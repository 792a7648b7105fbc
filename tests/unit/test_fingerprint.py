"""Issue 24: the environment fingerprint (system/host/fingerprint.py) from local files."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.system.host import fingerprint

MOUNTS = """/dev/vda / ext4 rw,relatime 0 0
/dev/loop3 /var/tmp/vb/t xfs rw,noatime,attr2,inode64 0 0
tmpfs /var/tmp/vb/t/sub tmpfs rw 0 0
"""


def test_the_filesystem_is_the_longest_mount_holding_the_path() -> None:
    assert fingerprint.mount_part(Path("/var/tmp/vb/t/data"), MOUNTS) == {
        "fs.type": "xfs", "fs.source": "/dev/loop3", "fs.options": "rw,noatime,attr2,inode64"}
    assert fingerprint.mount_part(Path("/var/tmp/vb/tx"), MOUNTS)["fs.type"] == "ext4"


def test_devices_and_caps_come_from_sysfs_and_the_cgroup(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    dev = tmp_path / "block" / "sdb"
    (dev / "device").mkdir(parents=True)
    (dev / "queue").mkdir()
    (dev / "size").write_text("2097152\n")
    (dev / "device" / "model").write_text("Samsung SSD 980\n")
    (dev / "device" / "firmware_rev").write_text("3B4QFXO7\n")
    (dev / "queue" / "rotational").write_text("0\n")
    cgroup = tmp_path / "cg"
    cgroup.mkdir()
    (cgroup / "blkio.throttle.read_iops_device").write_text("7:3 500\n")
    monkeypatch.setattr(fingerprint, "SYS_BLOCK", tmp_path / "block")
    found = fingerprint.gather(devices=["/dev/sdb"], cgroup=cgroup, versions={"fio": "fio-3.33"})
    assert found["device0.bytes"] == 2**30 and found["device0.model"] == "Samsung SSD 980"
    assert found["device0.firmware"] == "3B4QFXO7" and found["device0.rotational"] == "0"
    assert found["throttle.read_iops"] == "7:3 500" and "throttle.write_iops" not in found
    assert found["tool.fio"] == "fio-3.33" and found["host.kernel"]
    assert fingerprint.digest(found) == fingerprint.digest(dict(reversed(found.items())))
    assert fingerprint.digest({**found, "cpu.governor": "x"}) != fingerprint.digest(found)
