"""A lab disk slowed through QMP: the caps asked of QEMU, the requests the host refuses,
and the check that lets a lab disk be slowed without limits: (docs/faults.md)."""

from __future__ import annotations

import pytest

from volbench.config.lab import DiskClass, LabDisk, LabSpec
from volbench.faults import labdisk
from volbench.lab.errors import LabError
from volbench.lab.faultbridge import answer, throttle

SPEC = LabSpec(disks=(LabDisk("m1"), LabDisk("m2", disk_class="fast")))


def test_slow_cuts_every_cap_and_drops_bursts_return_restores_them() -> None:
    cls = DiskClass("b", iops=500, write_bps=7, bursts={"iops": 2500}, burst_seconds=20)
    assert throttle(cls, 10) == {"iops": 50, "iops_rd": 0, "iops_wr": 0, "bps": 0,
                                 "bps_rd": 0, "bps_wr": 1}
    assert throttle(cls) == {"iops": 500, "iops_rd": 0, "iops_wr": 0, "bps": 0, "bps_rd": 0,
                             "bps_wr": 7, "iops_max": 2500, "iops_max_length": 20}


def test_a_request_names_a_disk_of_this_lab_by_its_drive() -> None:
    command, args = answer(SPEC, {"action": "slow", "disk": "m2", "percent": 20})
    assert command == "block_set_io_throttle"
    assert args["id"] == "/machine/peripheral/labdev1/virtio-backend"
    assert args["iops"] == 400 and args["bps"] == 40 * 1024**2  # fast: 2000 IOPS, 200 MiB/s
    assert answer(SPEC, {"action": "return", "disk": "m1"})[1]["iops"] == 500


@pytest.mark.parametrize("request_, words", [
    ({"action": "slow", "disk": "sda", "percent": 10}, "no lab disk 'sda'"),
    ({"action": "slow", "disk": "m1", "percent": 0}, "not between 1 and 100"),
    ({"action": "eject", "disk": "m1"}, "unknown lab-disk action"),
])
def test_the_host_refuses_what_is_not_a_disk_or_an_action(request_: dict[str, object],
                                                          words: str) -> None:
    with pytest.raises(LabError, match=words):
        answer(SPEC, request_)


def test_lab_disks_are_told_by_their_path() -> None:
    assert labdisk.is_lab_disk("/dev/disk/by-id/virtio-m2")
    assert not labdisk.is_lab_disk("/dev/loop3") and not labdisk.is_lab_disk(None)
    assert labdisk.disk_name("/dev/disk/by-id/virtio-m2") == "m2"


def test_without_the_lab_slowing_a_lab_disk_is_refused_with_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.config.faults import FaultSpec
    from volbench.faults.base import FaultError

    monkeypatch.delenv(labdisk.CHANNEL_ENV, raising=False)
    with pytest.raises(FaultError, match="needs the lab"):
        labdisk.slow(FaultSpec(4.0, "slow", device="/dev/disk/by-id/virtio-m1"))
    # After the VM is gone (cleanup on the host), there is nothing left to undo.
    assert labdisk._undo_commands({"disk": "m1"}) == []
