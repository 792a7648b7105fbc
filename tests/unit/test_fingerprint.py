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


def fake_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dmi: dict[str, str],
                 models: dict[str, str]) -> None:
    """A sysfs with these DMI fields and block devices of these models."""
    for name, value in dmi.items():
        (tmp_path / "dmi").mkdir(exist_ok=True)
        (tmp_path / "dmi" / name).write_text(value + "\n")
    for dev, model in models.items():
        (tmp_path / "block" / dev / "device").mkdir(parents=True)
        (tmp_path / "block" / dev / "device" / "model").write_text(model + "  \n")
    monkeypatch.setattr(fingerprint, "DMI", tmp_path / "dmi")
    monkeypatch.setattr(fingerprint, "SYS_BLOCK", tmp_path / "block")


def test_an_ec2_instance_says_its_type_and_its_disks_kinds(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    fake_machine(tmp_path, monkeypatch, {"sys_vendor": "Amazon EC2", "product_name": "m5d.large"},
                 {"nvme1n1": "Amazon Elastic Block Store", "nvme2n1":
                  "Amazon EC2 NVMe Instance Storage"})
    found = fingerprint.gather(devices=["/dev/nvme1n1", "/dev/nvme2n1"])
    assert found["cloud.provider"] == "aws" and found["cloud.instance_type"] == "m5d.large"
    assert found["device0.cloud_disk"] == "aws-ebs"
    assert found["device1.cloud_disk"] == "aws-instance-store"


def test_gce_and_azure_are_named_but_their_type_is_not_guessed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    fake_machine(tmp_path, monkeypatch, {"sys_vendor": "Google", "product_name":
                                         "Google Compute Engine"},
                 {"sdb": "PersistentDisk", "nvme0n1": "nvme_card"})
    found = fingerprint.gather(devices=["/dev/sdb", "/dev/nvme0n1"])
    assert found["cloud.provider"] == "gcp" and "cloud.instance_type" not in found
    assert found["device0.cloud_disk"] == "gcp-local-ssd"  # sorted: nvme0n1 first
    assert found["device1.cloud_disk"] == "gcp-persistent-disk"
    azure = {"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine",
             "chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77"}
    assert fingerprint.cloud_part({f"dmi.{k}": v for k, v in azure.items()} | {
        "device0.model": "Virtual Disk"}) == {"cloud.provider": "azure",
                                              "device0.cloud_disk": "azure-managed-disk"}


def test_a_machine_that_says_nothing_of_a_cloud_gets_no_cloud_fields(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_machine(tmp_path, monkeypatch, {"sys_vendor": "QEMU", "product_name":
                                         "Standard PC (i440FX + PIIX, 1996)"},
                 {"vdb": "QEMU HARDDISK"})
    found = fingerprint.gather(devices=["/dev/vdb"])
    assert not [k for k in found if k.startswith("cloud.") or k.endswith(".cloud_disk")]
    assert found["dmi.sys_vendor"] == "QEMU" and found["device0.model"] == "QEMU HARDDISK"
