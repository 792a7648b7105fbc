"""A lab disk's throttle changed at run time through a real QEMU's QMP socket, asked the
way the guest asks (a request file, the host's bridge, an answer file). QEMU runs with
no machine (-machine none): the drive and its throttle are all that is needed, so no
guest boots (the lab test boots one: tests/lab/test_labdisk_fault_lab.py)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import tool
from volbench.config.lab import LabDisk, LabSpec
from volbench.faults import labdisk
from volbench.faults.base import FaultError
from volbench.lab.faultbridge import FaultBridge
from volbench.lab.qmp import Qmp

SPEC = LabSpec(disks=(LabDisk("m1"), LabDisk("m2")))  # standard: 500 IOPS, 50 MiB/s


@pytest.fixture
def qemu(tmp_path: Path) -> Iterator[Path]:
    binary = tool("qemu-system-x86_64")
    sock = tmp_path / "qmp.sock"
    drives = []
    for i, disk in enumerate(SPEC.disks):
        image = tmp_path / f"{disk.name}.raw"
        image.write_bytes(b"")
        drives += ["-drive", f"file={image},if=none,id=labdisk{i},format=raw,"
                   "throttling.iops-total=500"]
    vm = subprocess.Popen([binary, "-machine", "none", "-nodefaults", "-display", "none",
                           "-qmp", f"unix:{sock},server=on,wait=off", *drives])
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert vm.poll() is None and time.monotonic() < deadline, "QEMU did not start"
            time.sleep(0.05)
        yield sock
    finally:
        vm.terminate()
        vm.wait(timeout=20)


def iops_of(sock: Path) -> dict[str, int]:
    with Qmp(sock) as qmp:
        return {b["device"]: b["inserted"]["iops"] for b in qmp.execute("query-block")}


def test_the_guests_request_slows_and_returns_the_disk(qemu: Path, tmp_path: Path) -> None:
    bridge = FaultBridge(SPEC, tmp_path / "faults", qemu).start()
    try:
        reply = labdisk.ask(tmp_path / "faults", {"action": "slow", "disk": "m2",
                                                   "percent": 10})
        assert reply["arguments"]["iops"] == 50
        assert iops_of(qemu) == {"labdisk0": 500, "labdisk1": 50}
        labdisk.ask(tmp_path / "faults", {"action": "return", "disk": "m2"})
        assert iops_of(qemu) == {"labdisk0": 500, "labdisk1": 500}
        with pytest.raises(FaultError, match="no lab disk 'vda'"):
            labdisk.ask(tmp_path / "faults", {"action": "slow", "disk": "vda", "percent": 5})
    finally:
        bridge.stop()
    assert not bridge.thread.is_alive()
    assert list((tmp_path / "faults").iterdir()) == []  # every request answered and read


def test_no_bridge_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "faults").mkdir()
    with pytest.raises(FaultError, match="no answer from the lab's host"):
        labdisk.ask(tmp_path / "faults", {"action": "return", "disk": "m1"}, timeout=0.3)


def test_the_actions_steps_ask_the_host_and_keep_its_answer(
        qemu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.config.faults import FaultSpec
    from volbench.faults.base import run_commands

    monkeypatch.setenv(labdisk.CHANNEL_ENV, str(tmp_path / "faults"))
    bridge = FaultBridge(SPEC, tmp_path / "faults", qemu).start()
    try:
        action = labdisk.slow(FaultSpec(4.0, "slow", device="/dev/disk/by-id/virtio-m1",
                                        options={"percent": 20}))
        (done,) = run_commands(action.apply_commands())
        assert done.command == "qmp slow m1 20 %" and done.returncode == 0
        assert '"iops": 100' in done.output
        assert iops_of(qemu)["labdisk0"] == 100
        run_commands(action.undo_commands(action.data))
        assert iops_of(qemu)["labdisk0"] == 500
    finally:
        bridge.stop()
